"""The job queue's cost: its own overhead per job (the store alone: add, claim, renew, finish, read), on
SQLite and on PostgreSQL; and jobs per minute through one and through two servers sharing one
PostgreSQL queue (tiny.en, the 1.8 s clip, one thread a server).

    .venv/bin/python -m scripts.measure_job_queue [--store-jobs 300] [--jobs 16] [--out results/job_queue.json]

PostgreSQL is a real cluster made with initdb in a temporary folder (fsync on, as in production), as
in the tests (tests/postgres_server.py); the servers are live processes (tests/test_jobs_shared.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import requests

from tests.conftest import AUDIO, ROOT
from tests.postgres_server import Postgres
from tests.serving_helpers import wait_until
from tests.test_jobs_shared import Server
from whisper_endpoint.jobs.store import open_store

CLIP = AUDIO / "clips" / "asterisk_all-circuits-busy-now.flac"


def store_overhead(db, jobs: int, upload: str) -> dict:
    """Milliseconds per job for the store's part of a job's life: add, claim, renew, succeed, get."""
    store = open_store(db)
    try:
        timings = []
        for number in range(jobs):
            started = time.perf_counter()
            store.add(f"job{number}", "audio/flac", {"return_timestamps": "none"}, upload, None)
            job = store.claim_next("bench:1:x", 30.0)
            store.renew("bench:1:x", [job.id], 30.0)
            store.succeed(job.id, {"text": "All circuits are busy now."}, "bench:1:x")
            store.get(job.id)
            timings.append((time.perf_counter() - started) * 1000)
        return {"jobs": jobs, "median_ms": round(statistics.median(timings), 2),
                "p95_ms": round(sorted(timings)[int(0.95 * len(timings))], 2)}
    finally:
        store.close()


def jobs_per_minute(db: str, servers: int, jobs: int, folder: Path) -> dict:
    uploads = folder / f"uploads{servers}"
    running = [Server(f"s{servers}_{n}", db, uploads, folder) for n in range(servers)]
    try:
        wait_until(lambda: all(server.ready() for server in running), timeout=300, interval=0.2)
        clip = CLIP.read_bytes()
        for server in running:  # each server's first decode (one-off costs) before the clock starts
            requests.post(f"{server.url}/predict", data=clip, headers={"Content-Type": "audio/flac"}, timeout=120)
        started = time.perf_counter()
        ids = [requests.post(f"{running[0].url}/jobs", params={"return_timestamps": "none"}, data=clip,
                             headers={"Content-Type": "audio/flac"}, timeout=60).json()["id"] for _ in range(jobs)]

        def done() -> bool:
            views = [requests.get(f"{running[-1].url}/jobs/{job}", timeout=10).json() for job in ids]
            return all(view["status"] == "succeeded" for view in views)

        wait_until(done, timeout=600, interval=0.2)
        seconds = time.perf_counter() - started
        return {"servers": servers, "jobs": jobs, "seconds": round(seconds, 2),
                "jobs_per_minute": round(60 * jobs / seconds, 1), "load_average": round(os.getloadavg()[0], 2)}
    finally:
        for server in running:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store-jobs", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "job_queue.json")
    args = parser.parse_args()
    postgres = Postgres(durable=True).start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            upload = str(folder / "upload.flac")
            overhead = {"sqlite": store_overhead(folder / "jobs.sqlite", args.store_jobs, upload),
                        "postgresql": store_overhead(postgres.new_database(), args.store_jobs, upload)}
            print(json.dumps(overhead), flush=True)
            throughput = [jobs_per_minute(postgres.new_database(), servers, args.jobs, folder) for servers in (1, 2)]
            print(json.dumps(throughput), flush=True)
    finally:
        postgres.stop()
    args.out.write_text(json.dumps({"command": "python -m scripts.measure_job_queue", "store_overhead": overhead,
                                    "throughput": throughput, "model": "embedded:tiny.en", "clip": CLIP.name,
                                    "threads_per_server": 1}, indent=1) + "\n")


if __name__ == "__main__":
    main()
