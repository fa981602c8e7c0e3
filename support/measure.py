"""Timing and memory helpers: variants interleaved and repeated, medians, load average, RSS."""

from __future__ import annotations

import os
import resource
import statistics
import threading
import time
from pathlib import Path


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def timed_cpu(fn):
    """(wall seconds, CPU seconds of this process, result). With one compute thread per backend, CPU
    time is the work done, nearly independent of how many other jobs share the cores; wall time is not."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def interleaved(variants: dict, repeats: int) -> dict:
    """Run each variant ``repeats`` times, round-robin with the order rotated each round, so a burst
    of load from other jobs hits every variant alike. Returns {name: {"median_s", "runs_s",
    "median_cpu_s", "cpu_runs_s", "result"}}."""
    names = list(variants)
    runs: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    results: dict = {}
    for round_ in range(repeats):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            seconds, cpu_seconds, results[name] = timed_cpu(variants[name])
            runs[name].append(seconds)
            cpu[name].append(cpu_seconds)
    return {
        name: {"median_s": round(statistics.median(runs[name]), 3), "runs_s": [round(s, 3) for s in runs[name]],
               "median_cpu_s": round(statistics.median(cpu[name]), 3), "cpu_runs_s": [round(s, 3) for s in cpu[name]],
               "result": results[name]}
        for name in names
    }


def loadavg() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def rss_mib(pid: int | None = None) -> float | None:
    """Resident memory now (VmRSS) of a process, this one by default."""
    try:
        text = Path(f"/proc/{pid or 'self'}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM) since start or the last reset_peak_rss()."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def reset_peak_rss() -> None:
    """Start the peak over (Linux: "5" to clear_refs resets VmHWM), e.g. after decoding the input."""
    import gc

    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")


class RssSampler:
    """Sample a process's RSS every ``interval`` seconds in a thread: memory over time."""

    def __init__(self, pid: int, interval: float = 1.0):
        self.pid, self.interval = pid, interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        began = time.perf_counter()
        while not self._stop.is_set():
            value = rss_mib(self.pid)
            if value is not None:
                self.samples.append((round(time.perf_counter() - began, 1), value))
            self._stop.wait(self.interval)

    def __enter__(self) -> "RssSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
