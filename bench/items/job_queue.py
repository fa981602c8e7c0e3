"""The job queue's cost: its own overhead per job (the store alone: add, claim, renew, finish, read), on
SQLite and on PostgreSQL; and jobs per minute through one and through two servers sharing one PostgreSQL
queue (tiny.en, the 1.8 s clip, one thread a server).

PostgreSQL is a real cluster made with initdb in a temporary folder (fsync on, as in production); the
servers are live processes (``support.serving.ServerProcess``) with the tests' short lease.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import requests

from support.paths import CLIPS
from support.postgres import Postgres
from support.serving import CLIP, ServerProcess, wait_until

LEASE_S = "2.0"


def store_overhead(db, jobs: int, upload: str) -> dict:
    """Milliseconds per job for the store's part of a job's life: add, claim, renew, succeed, get."""
    from whisper_endpoint.jobs.store import open_store

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


def _queue_server(name: str, db: str, uploads: Path, folder: Path) -> ServerProcess:
    return ServerProcess(name, folder, JOBS_DB=db, JOBS_UPLOAD_DIR=str(uploads), JOBS_POLL_S="0.2",
                         JOBS_LEASE_S=LEASE_S, JOBS_CALLBACK_ALLOW_INTERNAL="1")


def jobs_per_minute(db: str, servers: int, jobs: int, folder: Path) -> dict:
    """``jobs`` posted to the first server, polled on the last, decoded by all of them."""
    uploads = folder / f"uploads{servers}"
    running = [_queue_server(f"queue{servers}_{n}", db, uploads, folder) for n in range(servers)]
    try:
        wait_until(lambda: all(server.ready() for server in running), timeout=300, interval=0.2)
        clip = (CLIPS / CLIP).read_bytes()
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


def run(plan, workdir: Path) -> dict:
    sizes = plan.job_queue
    folder = workdir / "job_queue"
    folder.mkdir(exist_ok=True)
    upload = str(folder / "upload.flac")
    postgres = Postgres(durable=True).start()
    try:
        overhead = {"sqlite": store_overhead(folder / "jobs.sqlite", sizes.store_jobs, upload),
                    "postgresql": store_overhead(postgres.new_database(), sizes.store_jobs, upload)}
        throughput = [jobs_per_minute(postgres.new_database(), servers, sizes.jobs, folder)
                      for servers in sizes.servers]
    finally:
        postgres.stop()
    return {"store_overhead": overhead, "throughput": throughput, "model": "embedded:tiny.en", "clip": CLIP,
            "threads_per_server": 1, "lease_s": float(LEASE_S)}
