"""Item 7: latency of short requests and a load test against the real server on loopback.

The server runs as its own process (server.py serve, MAX_CONCURRENCY=1 as on CPU by default);
requests come from support/load.py's client (requests + threads); the server's RSS is sampled
every second for the whole item."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from bench import inputs
from bench.backends import THREADS
from support.load import run_load
from support.measure import RssSampler, cpu_seconds, rss_mib

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(model: str, log: Path, *, max_concurrency: int = 1, cpu_threads: int = THREADS):
    """``server.py serve`` on a free loopback port, once /health says ready: (process, url)."""
    process, url = launch_server(model, log, max_concurrency=max_concurrency, cpu_threads=cpu_threads)
    wait_ready(process, url, log)
    return process, url


def launch_server(model: str, log: Path, *, max_concurrency: int = 1, cpu_threads: int = THREADS):
    """Start ``server.py serve`` without waiting for it (several servers load at once): (process, url)."""
    port = _free_port()
    env = {**os.environ, "ASR_MODEL": model, "PORT": str(port), "HOST": "127.0.0.1", "CPU_THREADS": str(cpu_threads),
           "MAX_CONCURRENCY": str(max_concurrency), "HF_HUB_OFFLINE": "1"}
    # The server gives the model one CTranslate2 worker per slot: MAX_CONCURRENCY's, and the jobs' (off here).
    env.pop("NUM_WORKERS", None)
    env["JOBS_ENABLED"] = "false"
    process = subprocess.Popen([sys.executable, "server.py", "serve"], cwd=ROOT, env=env,
                               stdout=log.open("wb"), stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}"


def wait_ready(process, url: str, log: Path, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    process.terminate()
    raise RuntimeError(f"server not healthy within {timeout_s:g} s")


def _with_server_cpu(pid: int, load) -> dict:
    """A load level's report plus the server's CPU seconds per request: with one decoding thread and
    MAX_CONCURRENCY=1 that is the latency an idle machine would give, whatever else shares the cores."""
    before = cpu_seconds(pid)
    report = load()
    report["server_cpu_s_per_request"] = round((cpu_seconds(pid) - before) / report["requests"], 3)
    return report


def run(plan, workdir: Path) -> dict:
    clip_file = inputs.clip_path(plan.latency_clip)
    body = clip_file.read_bytes()
    process, url = start_server(plan.model, workdir / "server.log")
    try:
        with RssSampler(process.pid, interval=1.0) as memory:
            requests.post(f"{url}/predict", data=body, headers={"Content-Type": "audio/flac"}, timeout=600)  # warm-up
            latency = _with_server_cpu(process.pid, lambda: run_load(
                f"{url}/predict", body, plan.latency_requests, 1, process.pid))
            levels = []
            for concurrency, total in plan.load:
                levels.append(_with_server_cpu(process.pid, lambda: run_load(
                    f"{url}/predict", body, total, concurrency, process.pid, checkpoint=max(1, total // 2))))
        final_rss = rss_mib(process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    return {
        "model": plan.model,
        "clip": clip_file.name,
        "clip_s": inputs.seconds_of(inputs.clip(plan.latency_clip)),
        "max_concurrency": 1,
        "latency_one_at_a_time": latency,
        "load": levels,
        "failed_requests": sum(sum(level["errors"].values()) for level in levels + [latency]),
        "rss_final_mib": final_rss,
        "rss_over_time": memory.samples,
    }
