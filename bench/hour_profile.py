"""``python -m bench.hour_profile [--minutes 60]``: one diarized request at the defaults, stage by stage on a
timeline (issue 73).

The request is the long-recording benchmark's (``bench/long_requests.py``: its recording, the handler at
its defaults, no thread variables, embedded base + embedded diarizer). Each stage's calls are timed where
they run: the method that does the stage is wrapped (in this process only) to record its thread, wall
start and end. The process's CPU time is sampled every ``SAMPLE_S``; each sample's CPU goes to the
innermost stages running in each thread then, in equal shares (a stage's native worker threads, CTranslate2's
or torch's, count for the stage that called them), and to "outside any stage" when none runs. So the
report has, per stage, its calls, its wall time (the union of its intervals) and its CPU, and over time
how many of the cores were busy; the plot shows both.

Writes ``results/hour_profile.json`` and ``docs/img/hour_profile.png``.
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import threading
import time
from pathlib import Path

from support.paths import ROOT

SAMPLE_S = 0.5
OUTSIDE = "outside any stage"


class Timeline:
    """Calls of wrapped stages (thread, stage, start, end in seconds from ``t0``), and the process CPU over time."""

    def __init__(self, sample_s: float = SAMPLE_S):
        self.sample_s = sample_s
        self.t0 = time.perf_counter()
        self.calls: list[dict] = []
        self.samples: list[tuple[float, float]] = []  # (seconds since t0, process CPU seconds)
        self._local = threading.local()
        self._stop = threading.Event()

    def wrap(self, owner, attribute: str, stage: str) -> None:
        """``owner.attribute`` (a method on an instance or a class, or a module's function) timed as ``stage``."""
        original = getattr(owner, attribute)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            depth = getattr(self._local, "depth", 0)
            self._local.depth = depth + 1
            started = time.perf_counter() - self.t0
            try:
                return original(*args, **kwargs)
            finally:
                self._local.depth = depth
                self.calls.append({"thread": threading.current_thread().name, "stage": stage, "depth": depth,
                                   "start": started, "end": time.perf_counter() - self.t0})

        setattr(owner, attribute, timed)

    def sample(self) -> None:
        while not self._stop.wait(self.sample_s):
            times = os.times()
            self.samples.append((time.perf_counter() - self.t0, times.user + times.system))

    def start(self) -> None:
        times = os.times()
        self.samples.append((time.perf_counter() - self.t0, times.user + times.system))
        threading.Thread(target=self.sample, name="cpu-sampler", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        times = os.times()
        self.samples.append((time.perf_counter() - self.t0, times.user + times.system))

    def innermost(self, at: float) -> list[str]:
        """The innermost stage running in each thread at ``at``."""
        deepest: dict[str, dict] = {}
        for call in self.calls:
            if call["start"] <= at < call["end"]:
                mine = deepest.get(call["thread"])
                if mine is None or call["depth"] > mine["depth"]:
                    deepest[call["thread"]] = call
        return [call["stage"] for call in deepest.values()]

    def report(self) -> dict:
        cpu: dict[str, float] = {}
        busy = []
        for (a, cpu_a), (b, cpu_b) in zip(self.samples, self.samples[1:]):
            spent = cpu_b - cpu_a
            busy.append([round(a, 2), round(spent / max(b - a, 1e-9), 3)])
            running = self.innermost((a + b) / 2) or [OUTSIDE]
            for stage in running:
                cpu[stage] = cpu.get(stage, 0.0) + spent / len(running)
        stages = {}
        for stage in sorted({call["stage"] for call in self.calls} | set(cpu)):
            intervals = sorted((c["start"], c["end"]) for c in self.calls if c["stage"] == stage)
            stages[stage] = {"calls": len(intervals), "wall_s": round(_union(intervals), 2),
                             "cpu_s": round(cpu.get(stage, 0.0), 2)}
        return {"stages": stages, "cores_busy": busy,
                "calls": [{**c, "start": round(c["start"], 3), "end": round(c["end"], 3)} for c in self.calls]}


def _union(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in intervals:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def watch(timeline: Timeline, handler) -> None:
    """The stages of a diarized request: the ASR's and the diarizer's methods, wrapped where they are."""
    from faster_whisper.transcribe import BatchedInferencePipeline, WhisperModel

    from whisper_endpoint.asr import speech
    from whisper_endpoint.asr.ctranslate2.model import CountingModel
    from whisper_endpoint.asr.languages import language_parts
    from whisper_endpoint.asr.long_form import windows
    from whisper_endpoint.speakers import step

    timeline.wrap(handler.asr, "transcribe", "asr")
    timeline.wrap(windows, "pack_speech", "asr: windows")
    timeline.wrap(speech._HeardOnce, "__call__", "VAD (Silero, once a request)")
    timeline.wrap(language_parts, "plan", "asr: languages")
    timeline.wrap(CountingModel, "_encode_counted", "asr: encoder")
    timeline.wrap(BatchedInferencePipeline, "generate_segment_batched", "asr: decoder")
    timeline.wrap(WhisperModel, "generate_with_fallback", "asr: decoder")
    timeline.wrap(WhisperModel, "add_word_timestamps", "asr: word times")
    timeline.wrap(step, "merge_speakers", "merge")
    diarizer = handler.diarizer
    timeline.wrap(diarizer, "diarize", "diarization")
    pipeline = diarizer.pipeline
    for method, stage in (("get_segmentations", "segmentation"), ("get_embeddings", "embeddings"),
                          ("_fill", "speech fill (VAD)"), ("_check_turns", "refinements"),
                          ("_cut_voice_changes", "refinements"), ("_check_count", "refinements"),
                          ("_check_windows", "refinements")):
        timeline.wrap(pipeline, method, stage)
    timeline.wrap(pipeline.clustering, "cluster", "clustering")


def plot(report: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    calls = report["calls"]
    threads = sorted({c["thread"] for c in calls}, key=lambda name: min(c["start"] for c in calls if c["thread"] == name))
    stages = sorted({c["stage"] for c in calls})
    colours = dict(zip(stages, plt.get_cmap("tab20").colors))
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(12, 5.5), sharex=True, height_ratios=[2, 1])
    for row, thread in enumerate(threads):
        for call in sorted((c for c in calls if c["thread"] == thread), key=lambda c: c["depth"]):
            height = 0.8 - 0.15 * call["depth"]
            top.broken_barh([(call["start"], call["end"] - call["start"])], (row - height / 2, height),
                            color=colours[call["stage"]], linewidth=0)
    top.set_yticks(range(len(threads)), threads)
    top.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[s]) for s in stages], labels=stages,
               loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    top.set_title(title, fontsize=10)
    times = [t for t, _ in report["cores_busy"]]
    bottom.fill_between(times, [b for _, b in report["cores_busy"]], step="post", color="#555555", linewidth=0)
    bottom.axhline(os.cpu_count() or 2, color="#c0392b", linewidth=0.8)
    bottom.set_ylabel("cores busy")
    bottom.set_xlabel("seconds")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "long_requests"))
    parser.add_argument("--out", default=str(ROOT / "results" / "hour_profile.json"))
    parser.add_argument("--plot", default=str(ROOT / "docs" / "img" / "hour_profile.png"))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.long_requests import recording
    from support import results
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    path = recording(args.minutes, Path(args.cache))
    handler = EndpointHandler(settings=ModelSettings(diarization_model="embedded"))
    timeline = Timeline()
    watch(timeline, handler)
    body = path.read_bytes()
    timeline.start()
    wall, cpu = time.perf_counter(), time.process_time()
    out = handler({"inputs": body, "parameters": {"diarize": True, "return_speaker_turns": True}})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    timeline.stop()
    report = timeline.report()
    result = {"minutes": round(out["duration"] / 60, 2), "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
              "blocks": out["decoding"].get("blocks", 1), "how": __doc__.split("\n\n")[1].replace("\n", " "),
              **report}
    results.write(args.out, result, f".venv/bin/python -m bench.hour_profile --minutes {args.minutes:g}")
    plot(report, Path(args.plot), f"one diarized {args.minutes:g} min request at the defaults: "
                                  f"{wall:.0f} s wall, {cpu:.0f} CPU s")
    width = max(len(stage) for stage in report["stages"])
    for stage, row in sorted(report["stages"].items(), key=lambda item: -item[1]["cpu_s"]):
        print(f"{stage:<{width}}  calls {row['calls']:>5}  wall {row['wall_s']:>8.1f} s  CPU {row['cpu_s']:>8.1f} s")
    print(f"total: {wall:.1f} s wall, {cpu:.1f} CPU s; written to {args.out} and {args.plot}")


if __name__ == "__main__":
    main()
