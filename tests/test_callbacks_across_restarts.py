"""Issue 60, item 3: a callback cut off by a shutdown is delivered after the restart.

A real server process finishes a job whose callback host holds the first delivery without answering;
SIGTERM arrives while it waits. A new process on the same SQLite file delivers the callback again: both
deliveries carry the job's id and the same ``Idempotency-Key``, so the host can drop the second. The
store's part (pending, attempts, leases) is tested on SQLite and PostgreSQL in test_job_store.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from support.paths import ROOT
from support.audio import read_clip
from support.serving import CLIP, free_port, stop_process, wait_until
from whisper_endpoint.jobs import open_store


class _SlowHook(BaseHTTPRequestHandler):
    """Holds the first delivery unanswered until the test releases it; answers the others at once."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.deliveries.append((self.headers.get("Idempotency-Key"), body))
        if len(self.server.deliveries) == 1:
            self.server.first.set()
            self.server.release.wait(60)
        try:
            self.send_response(204)
            self.end_headers()
        except OSError:  # the sender is gone (the shutdown dropped it)
            pass

    def log_message(self, *args):
        pass


def _start(port: int, db, log) -> subprocess.Popen:
    cache = os.environ.get("TEST_MODEL_CACHE", os.path.expanduser("~/.cache/whisper-endpoint"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MODEL_CACHE_DIR": cache, "ASR_MODEL": "embedded:tiny.en",
           "PORT": str(port), "HOST": "127.0.0.1", "JOBS_DB": str(db), "JOBS_POLL_S": "0.2",
           "JOBS_CALLBACK_ALLOW_INTERNAL": "true", "JOBS_CALLBACK_TIMEOUT_S": "60", "JOBS_CALLBACK_ATTEMPTS": "1",
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "whisper_endpoint.serving"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def _listening(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=2).status_code in (200, 503)
    except requests.RequestException:
        return False


def _callback_status(url: str, job_id: str) -> str | None:
    return requests.get(f"{url}/jobs/{job_id}", timeout=5).json()["callback"]["status"]


@pytest.mark.slow  # two server processes (_start)
def test_a_callback_cut_off_by_sigterm_is_delivered_after_the_restart_with_the_same_key(tmp_path):
    """One attempt allowed (JOBS_CALLBACK_ATTEMPTS=1): an attempt the server's own shutdown cut off is not
    spent, so even that callback is tried again."""
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _SlowHook)
    hook.deliveries, hook.first, hook.release = [], threading.Event(), threading.Event()
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    db, port = tmp_path / "jobs.sqlite", free_port()
    url = f"http://127.0.0.1:{port}"
    callback = f"http://127.0.0.1:{hook.server_address[1]}/done"
    log = (tmp_path / "server.log").open("w")
    try:
        first = _start(port, db, log)
        try:
            wait_until(lambda: _listening(url), timeout=60, interval=0.1)
            job_id = requests.post(f"{url}/jobs", params={"callback_url": callback}, data=read_clip(CLIP),
                                   timeout=30).json()["id"]
            assert hook.first.wait(60), (tmp_path / "server.log").read_text()
        finally:
            stop_process(first)  # during the first delivery, which the host holds
        store = open_store(db)
        job = store.get(job_id)
        store.close()
        assert (job.status, job.callback_status) == ("succeeded", "pending")  # the result kept, the callback owed
        second = _start(port, db, log)
        try:
            wait_until(lambda: len(hook.deliveries) == 2, timeout=30, interval=0.05)
            wait_until(lambda: _listening(url) and _callback_status(url, job_id) == "delivered", timeout=10)
        finally:
            stop_process(second)
    finally:
        log.close()
        hook.release.set()
        hook.shutdown()
    (key1, body1), (key2, body2) = hook.deliveries
    assert key1 == key2 == f"{job_id}:succeeded", hook.deliveries  # the receiver's way to drop the second
    assert body1["id"] == body2["id"] == job_id and body2["result"] == body1["result"]
    assert "Application shutdown complete" in (tmp_path / "server.log").read_text()
