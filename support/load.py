"""A load-test client: N posts of one clip from C threads against a running server; latency,
throughput, errors and the server's memory. Used by ``scripts/load_test.py`` and bench item 7.

Latency is measured per request from send to full response, so with MAX_CONCURRENCY=1 it includes the
time spent queued.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import requests

from support.measure import rss_mib

logger = logging.getLogger(__name__)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run_load(url: str, clip: bytes, total: int, concurrency: int, pid: int | None = None,
             checkpoint: int = 20) -> dict:
    """Post ``clip`` (FLAC) to ``url`` ``total`` times from ``concurrency`` threads. With ``pid`` (the
    server's), its resident memory before, after ``checkpoint`` responses and after the last one."""
    latencies: list[float] = []
    statuses: Counter = Counter()
    memory: dict[str, float | None] = {}
    lock = threading.Lock()
    session = threading.local()

    def server_rss() -> float | None:
        return rss_mib(pid) if pid is not None else None  # rss_mib(None) would be this process's

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
                memory[f"rss_mib_after_{checkpoint}"] = server_rss()
            if done % checkpoint == 0:
                logger.info("%d/%d done, %.0f s", done, total, time.perf_counter() - began)

    memory["rss_mib_before"] = server_rss()
    began = time.perf_counter()  # read by one() for the progress lines
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(total)))
    wall = time.perf_counter() - began
    memory[f"rss_mib_after_{total}"] = server_rss()
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
