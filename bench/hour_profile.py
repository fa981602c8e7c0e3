"""``python -m bench.hour_profile [--minutes 60]``: one diarized request at the defaults, stage by stage on a
timeline (issue 73).

The request is the long-recording benchmark's (``bench/long_requests.py``: its recording, the handler at
its defaults, no thread variables, embedded base + embedded diarizer). Each stage's calls are timed where
they run (the method that does the stage wrapped in this process only: ``support/timeline.py``, which also
says how each CPU sample is given to the stages running then). So the report has, per stage, its calls,
its wall time and its CPU, and over time how many of the cores were busy; the plot shows both.

Writes ``results/hour_profile.json`` and ``docs/img/hour_profile.png``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from support.paths import ROOT
from support.timeline import Timeline


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
    first = {}
    for call in calls:
        first[call["thread"]] = min(first.get(call["thread"], call["start"]), call["start"])
    threads = sorted(first, key=first.get)  # in the order they first ran a stage
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
