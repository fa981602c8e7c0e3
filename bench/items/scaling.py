"""Item 6: time and peak memory against audio length, each length in a fresh process.

A fresh process per length makes its peak RSS that length's own: models and the input array
included, the benchmark's own decoding of the source file (a larger transient) excluded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one(plan, seconds: float) -> dict:
    """Run in the child: load, measure RSS, transcribe once, report."""
    from bench import backends, inputs
    from support.measure import peak_rss_mib, reset_peak_rss, rss_mib, timed_cpu

    audio = inputs.long_audio(plan, seconds)
    inputs.samples.cache_clear()  # keep only this length's array, as a server would
    handler = backends.handler(plan.model)
    reset_peak_rss()
    loaded = rss_mib()
    elapsed, cpu, response = timed_cpu(lambda: backends.ask(handler, audio, language=plan.language))
    return {"audio_s": inputs.seconds_of(audio), "time_s": round(elapsed, 2), "cpu_s": round(cpu, 2),
            "real_time_factor": round(elapsed / (len(audio) / inputs.RATE), 4),
            "rss_after_load_mib": loaded, "peak_rss_mib": peak_rss_mib(),
            "mode": response["decoding"]["mode"], "chars": len(response["text"])}


def run(plan) -> dict:
    rows = []
    for seconds in plan.scaling_s:
        completed = subprocess.run(
            [sys.executable, "-m", "bench.items.scaling", "quick" if plan.quick else "full", str(seconds)],
            cwd=ROOT, env=os.environ.copy(), capture_output=True, text=True, check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"scaling child for {seconds} s failed: {completed.stderr[-2000:]}")
        rows.append(json.loads(completed.stdout.strip().splitlines()[-1]))
    return {"model": plan.model, "lengths": rows}


if __name__ == "__main__":
    from bench.plan import by_name

    print(json.dumps(one(by_name(sys.argv[1]), float(sys.argv[2]))))
