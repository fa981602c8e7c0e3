"""Calls of a process's stages on a timeline by thread, and its CPU over time (bench/hour_profile.py).

``Timeline.wrap(owner, attribute, stage)`` times a method or function as ``stage`` where it runs (its thread,
wall start and end, how deep in other stages); a sampler thread reads the process's CPU time every
``sample_s``. ``report()`` gives each stage its calls, its wall time (the union of its calls) and its CPU:
each sample's CPU goes to the innermost stage running in each thread then, in equal shares (a stage's native
worker threads count for the stage that called them), and to ``OUTSIDE`` when none runs.
"""

from __future__ import annotations

import functools
import os
import threading
import time

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
