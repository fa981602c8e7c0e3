"""Batch throughput: the batch command over the same files in single-process and Ray modes.

    python -m scripts.measure_batch [--model embedded:tiny.en] [--inputs DIR_OR_GLOB ...]
                                    [--ray-workers 2] [--out results/batch_throughput.json]

Each mode is the real command (``python -m whisper_endpoint.batch``) in a subprocess with a fresh
output folder, so each run decodes everything. Reported per mode: audio minutes per wall minute of
the decoding phase (the command's own summary: after the model is loaded, or after the Ray cluster
is up, but including the Ray workers' model loading) and of the whole command (start-up included).
Modes: ``single-1t`` (one process, one decoding thread), ``single-2t`` (one process, CPU_THREADS=2),
``ray-<N>x<C>`` (N Ray Data workers with C CPUs and C threads each, local cluster). The machine's
load average is recorded before and after: other jobs share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_INPUTS = [str(ROOT / "audio" / "clips")]


def run_mode(name: str, inputs: list[str], model: str, extra: list[str], env: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"batch-{name}-") as tmp:
        summary_file = Path(tmp) / "summary.json"
        command = [sys.executable, "-m", "whisper_endpoint.batch", *inputs, "--out", str(Path(tmp) / "out"),
                   "--no-progress", "--summary-json", str(summary_file), *extra]
        started = time.perf_counter()
        run = subprocess.run(command, cwd=ROOT, env={**os.environ, "ASR_MODEL": model, **env},
                             capture_output=True, text=True)
        total_s = time.perf_counter() - started
        if run.returncode not in (0, 1):
            raise SystemExit(f"{name} failed ({run.returncode}):\n{run.stderr[-3000:]}")
        summary = json.loads(summary_file.read_text())
    audio_min = summary["audio_s"] / 60
    row = {
        "mode": name, "files": summary["files"], "done": summary["done"], "failed": summary["failed"],
        "audio_minutes": round(audio_min, 2),
        "decode_wall_s": summary["wall_s"], "command_wall_s": round(total_s, 1),
        "audio_min_per_wall_min_decoding": round(audio_min / (summary["wall_s"] / 60), 2),
        "audio_min_per_wall_min_command": round(audio_min / (total_s / 60), 2),
        "settings": env | ({"args": " ".join(extra)} if extra else {}),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="embedded:tiny.en")
    parser.add_argument("--inputs", nargs="+", default=DEFAULT_INPUTS)
    parser.add_argument("--ray-workers", type=int, default=2)
    parser.add_argument("--ray-cpus", type=float, default=1.0, help="CPUs (and threads) per Ray worker")
    parser.add_argument("--modes", default="single-1t,single-2t,ray")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "batch_throughput.json")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load_before = os.getloadavg()
    rows = []
    for mode in args.modes.split(","):
        if mode == "single-1t":
            rows.append(run_mode(mode, args.inputs, args.model, [], {"CPU_THREADS": "1"}))
        elif mode == "single-2t":
            rows.append(run_mode(mode, args.inputs, args.model, [], {"CPU_THREADS": "2"}))
        elif mode == "ray":
            cpus = args.ray_cpus
            extra = ["--ray", "--workers", str(args.ray_workers), "--cpus-per-worker", str(cpus),
                     "--num-cpus", str(os.cpu_count())]
            name = f"ray-{args.ray_workers}x{cpus:g}"
            rows.append(run_mode(name, args.inputs, args.model, extra, {"CPU_THREADS": str(max(1, int(cpus)))}))
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    report = {
        "what": "python -m whisper_endpoint.batch over the same files, single-process vs Ray Data (local cluster)",
        "model": args.model, "inputs": args.inputs,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "runs": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
