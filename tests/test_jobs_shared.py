"""Two live server processes on one PostgreSQL queue and one uploads folder: jobs submitted to one are
read and cancelled through the other; the server running a job is SIGKILLed mid-job and the other
finishes it once its lease expires; every job's text equals the same file transcribed alone, and
each job is finished (called back) once."""

from __future__ import annotations

import queue
import re
import signal
import time

import psycopg
import requests

from support.paths import AUDIO
from support.serving import TEXT, ServerProcess, wait_until

LEASE_S = 2.0


def queue_server(name: str, db: str, uploads, log_folder) -> ServerProcess:
    """A server process on the shared queue, with a short lease."""
    return ServerProcess(name, log_folder, JOBS_DB=db, JOBS_UPLOAD_DIR=str(uploads), JOBS_POLL_S="0.2",
                         JOBS_LEASE_S=str(LEASE_S), JOBS_CALLBACK_ALLOW_INTERNAL="1")


def _job(server: ServerProcess, job_id: str) -> dict:
    return requests.get(f"{server.url}/jobs/{job_id}", timeout=10).json()


def _finished(server: ServerProcess, job_id: str) -> dict:
    wait_until(lambda: _job(server, job_id)["status"] in ("succeeded", "failed"), timeout=120, interval=0.1)
    return _job(server, job_id)


def _holder(db: str, job_id: str) -> int:
    """The pid of the server holding the job's lease (``host:pid:nonce``)."""
    with psycopg.connect(db) as connection:
        owner = connection.execute("SELECT lease_owner FROM jobs WHERE id = %s", (job_id,)).fetchone()[0]
    return int(owner.split(":")[1])


def test_two_servers_share_one_queue(postgres, tmp_path, clip, callbacks):
    db, uploads = postgres.new_database(), tmp_path / "uploads"
    long_audio = (AUDIO / "dialogues" / "flite_meeting.flac").read_bytes()  # 36 s: seconds to decode
    servers = [queue_server(name, db, uploads, tmp_path) for name in ("a", "b")]
    a, b = servers
    try:
        wait_until(lambda: a.ready() and b.ready(), timeout=180, interval=0.2)
        params = {"return_timestamps": "none", "callback_url": callbacks.url}

        short = requests.post(f"{a.url}/jobs", params=params, data=clip).json()["id"]
        assert _finished(b, short)["result"]["text"] == TEXT  # submitted to a, read through b

        # Cancelled through b while it runs (on either server): gone everywhere, its server free again.
        cave = (AUDIO / "dialogues" / "fillets_cave.flac").read_bytes()  # 125 s: 5 windows, seconds each
        cancelled = requests.post(f"{a.url}/jobs", params=params, data=cave).json()["id"]
        wait_until(lambda: _job(b, cancelled)["status"] == "running", timeout=60, interval=0.02)
        runner = next(s for s in servers if s.process.pid == _holder(db, cancelled))
        assert requests.delete(f"{b.url}/jobs/{cancelled}").status_code == 204
        assert _job(a, cancelled).get("code") == "job_not_found"
        stopped = re.compile(rf"job {cancelled}: no longer this server's .* stopped after (\d+) of (\d+) windows")
        wait_until(lambda: stopped.search(runner.log.read_text()), timeout=30)
        done, total = map(int, stopped.search(runner.log.read_text()).groups())
        assert total == 0 or done < total  # stopped at its next window (or before its first), not at the end

        # The server running a job is killed mid-job: the other runs it again once the lease expires.
        killed = requests.post(f"{b.url}/jobs", params=params, data=long_audio).json()["id"]
        waiting = requests.post(f"{b.url}/jobs", params=params, data=clip).json()["id"]
        wait_until(lambda: _job(a, killed)["status"] == "running", timeout=60, interval=0.02)
        victim = next(s for s in servers if s.process.pid == _holder(db, killed))
        survivor = b if victim is a else a
        time.sleep(0.5)  # a window or more decoded
        victim.process.send_signal(signal.SIGKILL)
        victim.process.wait(30)
        resumed = _finished(survivor, killed)
        assert (resumed["status"], resumed["attempts"]) == ("succeeded", 2), resumed
        alone = requests.post(f"{survivor.url}/predict", params={"return_timestamps": "none"}, data=long_audio,
                              timeout=120).json()
        assert resumed["result"]["text"] == alone["text"] and "quarterly numbers" in alone["text"].lower()
        assert _finished(survivor, waiting)["result"]["text"] == TEXT

        called_back = []
        deadline = time.monotonic() + 10
        while len(called_back) < 3 and time.monotonic() < deadline:
            try:
                called_back.append(callbacks.received.get(timeout=1)["id"])
            except queue.Empty:
                pass
        time.sleep(1)  # a second callback for any job would come now
        while not callbacks.received.empty():
            called_back.append(callbacks.received.get()["id"])
        assert sorted(called_back) == sorted([short, killed, waiting])  # once each; none for the cancelled job
    finally:
        for server in servers:
            server.stop()
