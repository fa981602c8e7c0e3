"""Load a running server: N requests of one clip from C threads; latency, throughput, errors, memory.

    python -m scripts.load_test [--url http://127.0.0.1:8080] [--file CLIP] [--requests 200]
                                [--concurrency 8] [--route /predict] [--pid SERVER_PID]

Each request posts the clip as a binary body. Latency is measured per request from send to full
response, so with MAX_CONCURRENCY=1 it includes the time spent queued. The server's resident memory
(VmRSS, Linux) is read after the first 20 responses and after the last one when --pid is given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

DEFAULT_CLIP = Path(__file__).resolve().parents[1] / "audio/clips/asterisk_all-circuits-busy-now.flac"


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(url: str, clip: bytes, total: int, concurrency: int, pid: int | None, checkpoint: int = 20) -> dict:
    latencies: list[float] = []
    statuses: Counter = Counter()
    memory: dict[str, float | None] = {}
    lock = threading.Lock()
    session = threading.local()

    def one(_: int) -> None:
        if not hasattr(session, "http"):
            session.http = requests.Session()
        started = time.perf_counter()
        try:
            response = session.http.post(url, data=clip, headers={"Content-Type": "audio/flac"}, timeout=600)
            status = response.status_code
        except requests.RequestException as exc:
            status = type(exc).__name__
        elapsed = time.perf_counter() - started
        with lock:
            statuses[status] += 1
            if status == 200:
                latencies.append(elapsed)
            done = sum(statuses.values())
            if done == checkpoint:
                memory[f"rss_mib_after_{checkpoint}"] = rss_mib(pid)
            if done % checkpoint == 0:
                print(f"{done}/{total} done, {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)

    memory["rss_mib_before"] = rss_mib(pid)
    began = time.perf_counter()  # read by one() for the progress lines
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(total)))
    wall = time.perf_counter() - began
    memory[f"rss_mib_after_{total}"] = rss_mib(pid)
    return {
        "requests": total,
        "concurrency": concurrency,
        "ok": statuses.get(200, 0),
        "errors": {str(k): v for k, v in statuses.items() if k != 200},
        "wall_s": round(wall, 1),
        "throughput_rps": round(total / wall, 3),
        "latency_s": {
            "p50": round(percentile(latencies, 0.50), 3) if latencies else None,
            "p95": round(percentile(latencies, 0.95), 3) if latencies else None,
            "mean": round(statistics.fmean(latencies), 3) if latencies else None,
            "max": round(max(latencies), 3) if latencies else None,
        },
        **{k: round(v, 1) if v is not None else None for k, v in memory.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--route", default="/predict")
    parser.add_argument("--file", type=Path, default=DEFAULT_CLIP)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pid", type=int, help="the server's process id, for its memory")
    args = parser.parse_args(argv)
    health = requests.get(f"{args.url}/health", timeout=10).json()
    report = run(args.url + args.route, args.file.read_bytes(), args.requests, args.concurrency, args.pid)
    print(json.dumps({"server": health, "clip": args.file.name, **report}, indent=2))


if __name__ == "__main__":
    main()
