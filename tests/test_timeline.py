"""The hour profile's timeline (support/timeline.py, for bench/hour_profile.py): nested stages by thread,
wall as the union of a stage's calls, and each CPU sample given to the innermost stage running then."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from support.timeline import OUTSIDE, Timeline, _union


def _spin(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def test_a_union_counts_overlapping_calls_once():
    assert _union([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 4.0
    assert _union([]) == 0.0


def test_nested_stages_and_their_cpu():
    work = SimpleNamespace(outer=lambda: (_spin(0.05), work.inner()), inner=lambda: _spin(0.3))
    timeline = Timeline(sample_s=0.02)
    timeline.wrap(work, "inner", "inner")
    timeline.wrap(work, "outer", "outer")
    timeline.start()
    runner = threading.Thread(target=work.outer, name="worker")
    runner.start()
    runner.join()
    time.sleep(0.2)  # the process idle: samples outside any stage
    timeline.stop()
    report = timeline.report()
    calls = {call["stage"]: call for call in report["calls"]}
    assert calls["outer"]["depth"] == 0 and calls["inner"]["depth"] == 1
    assert {call["thread"] for call in report["calls"]} == {"worker"}
    assert calls["outer"]["start"] <= calls["inner"]["start"] < calls["inner"]["end"] <= calls["outer"]["end"]
    stages = report["stages"]
    assert stages["inner"]["wall_s"] >= 0.29 and stages["outer"]["wall_s"] >= stages["inner"]["wall_s"]
    # the inner stage's spinning is its own, not its caller's; the idle time belongs to no stage
    assert stages["inner"]["cpu_s"] > stages["outer"]["cpu_s"]
    assert timeline.innermost(calls["inner"]["start"] + 0.1) == ["inner"]
    assert timeline.innermost(calls["outer"]["end"] + 0.3) == []
    assert OUTSIDE in stages
