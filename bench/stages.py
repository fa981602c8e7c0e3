"""CPU time and peak memory per stage of one request, by wrapping the methods that do each stage.

``StageClock.wrap(obj, "method", "name")`` replaces a bound method on that one object (nothing
global is patched) with one that adds its CPU time to ``name``. Stages nest: a stage called inside
another is recorded under both names joined by "/" (``turn_check/campplus``), so each figure is
inclusive of its own children only. Top-level stages (``peak=True``) also record the peak resident
memory reached while they ran: VmHWM is reset when they start and read when they end.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from pathlib import Path

from support.measure import peak_rss_mib


class StageClock:
    def __init__(self):
        self.cpu_s: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.peak_mib: dict[str, float] = {}
        self.request_peak_mib = 0.0  # the peak over everything since start(), stages or not
        self._stack: list[str] = []

    def start(self) -> None:
        self.request_peak_mib = 0.0
        self._reset_peak()

    def request_peak(self) -> float:
        return max(self.request_peak_mib, peak_rss_mib())

    def _reset_peak(self) -> None:
        self.request_peak_mib = max(self.request_peak_mib, peak_rss_mib())
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS (Linux)

    def wrap(self, obj, method: str, name: str, *, peak: bool = False) -> None:
        original = getattr(obj, method)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            path = "/".join([*self._stack, name]) if self._stack and self._stack[-1] != name else name
            self._stack.append(name)
            if peak:
                self._reset_peak()
            started = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.cpu_s[path] += time.process_time() - started
                self.calls[path] += 1
                self._stack.pop()
                if peak:
                    self.peak_mib[name] = max(self.peak_mib.get(name, 0.0), peak_rss_mib())
                    self._reset_peak()

        setattr(obj, method, timed)

    def report(self) -> dict:
        """CPU seconds per stage path, plus "PARENT/other": a parent's time outside its child stages
        (for the diarization: speaker counting, clustering and reconstruction, pyannote's glue)."""
        cpu = dict(self.cpu_s)
        for parent in {path.rsplit("/", 1)[0] for path in self.cpu_s if "/" in path}:
            children = [path for path in self.cpu_s if path.rsplit("/", 1)[0] == parent and path != parent]
            if parent in cpu:
                cpu[f"{parent}/other"] = cpu[parent] - sum(self.cpu_s[path] for path in children)
        return {"cpu_s": {name: round(value, 3) for name, value in sorted(cpu.items())},
                "calls": dict(sorted(self.calls.items())), "peak_rss_mib": dict(sorted(self.peak_mib.items()))}


def watch_handler(clock: StageClock, handler) -> None:
    """The handler's ASR and diarizer, and the stages inside an embedded or pyannote pipeline."""
    clock.wrap(handler.asr, "transcribe", "asr", peak=True)
    clock.wrap(handler.diarizer, "diarize", "diarization")
    watch_pipeline(clock, handler.diarizer.pipeline)


def watch_pipeline(clock: StageClock, pipeline) -> None:
    """pyannote SpeakerDiarization's stages; the embedded pipeline's own ones where it has them."""
    for method, name in (("get_segmentations", "segmentation"), ("get_embeddings", "embeddings"),
                         ("_fill", "speech_fill"), ("_check_turns", "turn_check")):
        if hasattr(pipeline, method):
            clock.wrap(pipeline, method, name, peak=True)
    clustering = getattr(pipeline, "clustering", None)
    if hasattr(clustering, "cluster"):
        clock.wrap(clustering, "cluster", "clustering")
    network = getattr(pipeline, "embedding_network", None)
    for method, name in (("fbank", "fbank"), ("embed", "campplus")):
        if hasattr(network, method):
            clock.wrap(network, method, name)
