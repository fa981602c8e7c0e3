"""The batch command's throughput: ``python -m whisper_endpoint.batch`` over the same files in one
process and on a local Ray cluster (Ray Data).

Each mode is the real command in a subprocess with a fresh output folder, so each run decodes
everything. Reported per mode: audio minutes per wall minute of the decoding phase (the command's own
summary: after the model is loaded, or after the Ray cluster is up, but including the Ray workers' model
loading) and of the whole command (start-up included). Modes: ``single-1t`` (one process, one decoding
thread), ``single-2t`` (one process, CPU_THREADS=2), ``ray`` (N Ray Data workers with C CPUs and C
threads each: reported as ``ray-<N>x<C>``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support.paths import AUDIO, ROOT


def _mode(mode: str, sizes) -> tuple[str, list[str], dict]:
    """(reported name, the command's extra arguments, its environment) of a mode."""
    if mode in ("single-1t", "single-2t"):
        return mode, [], {"CPU_THREADS": mode[-2]}
    if mode == "ray":
        cpus = sizes.ray_cpus
        extra = ["--ray", "--workers", str(sizes.ray_workers), "--cpus-per-worker", str(cpus),
                 "--num-cpus", str(os.cpu_count())]
        return f"ray-{sizes.ray_workers}x{cpus:g}", extra, {"CPU_THREADS": str(max(1, int(cpus)))}
    raise ValueError(f"unknown batch mode {mode!r} (single-1t, single-2t or ray)")


def run_mode(mode: str, inputs: list[str], sizes) -> dict:
    """The command over ``inputs`` in one mode, timed from the outside and by its own summary."""
    name, extra, env = _mode(mode, sizes)
    with tempfile.TemporaryDirectory(prefix=f"batch-{name}-") as tmp:
        summary_file = Path(tmp) / "summary.json"
        command = [sys.executable, "-m", "whisper_endpoint.batch", *inputs, "--out", str(Path(tmp) / "out"),
                   "--no-progress", "--summary-json", str(summary_file), *extra]
        started = time.perf_counter()
        env_run = {"OMP_NUM_THREADS": "1", **os.environ, "ASR_MODEL": sizes.model, **env}
        done = subprocess.run(command, cwd=ROOT, env=env_run, capture_output=True, text=True, check=False)
        total_s = time.perf_counter() - started
        if done.returncode not in (0, 1):  # 1: some files failed, which the summary counts
            raise RuntimeError(f"batch {name} failed ({done.returncode}): {done.stderr[-3000:]}")
        summary = json.loads(summary_file.read_text())
    audio_min = summary["audio_s"] / 60
    return {
        "mode": name, "files": summary["files"], "done": summary["done"], "failed": summary["failed"],
        "audio_minutes": round(audio_min, 2),
        "decode_wall_s": summary["wall_s"], "command_wall_s": round(total_s, 1),
        "audio_min_per_wall_min_decoding": round(audio_min / (summary["wall_s"] / 60), 2),
        "audio_min_per_wall_min_command": round(audio_min / (total_s / 60), 2),
        "settings": env | ({"args": " ".join(extra)} if extra else {}),
    }


def run(plan) -> dict:
    sizes = plan.batch
    inputs = [str(AUDIO / path) for path in sizes.inputs]
    rows = [run_mode(mode, inputs, sizes) for mode in sizes.modes]
    return {"what": "python -m whisper_endpoint.batch over the same files, single-process vs Ray Data (local cluster)",
            "model": sizes.model, "inputs": list(sizes.inputs), "runs": rows}
