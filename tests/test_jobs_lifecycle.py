"""Jobs beside live traffic (issue 18): their own slots, progress, deadline, shutdown, storage off the
event loop, and callbacks that go where they were checked.

Decided by order, not time: a job is held after its first window by its decode context's hook
(serving_helpers.HeldHandler) while the test does what it checks. The long input is flite_meeting
(36 s) in 10 s windows, one per batch: 5 windows.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from support.paths import ROOT, AUDIO
from support.serving import TEXT, HeldHandler, LiveServer, free_port, live_server, wait_until
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.jobs import JobSettings, open_store, uploads
from whisper_endpoint.jobs.callbacks import deliver
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

pytestmark = pytest.mark.usefixtures("short_windows")  # several windows from short audio (conftest)

LONG = {"chunk_length_s": 10, "batch_size": 1, "return_timestamps": "none"}
WINDOWS = 5


@pytest.fixture(scope="module")
def long_audio() -> bytes:
    return (AUDIO / "dialogues" / "flite_meeting.flac").read_bytes()


def _job(url: str, job_id: str) -> dict:
    return requests.get(f"{url}/jobs/{job_id}", timeout=10).json()


def _finished(url: str, job_id: str) -> dict:
    wait_until(lambda: _job(url, job_id)["status"] in ("succeeded", "failed"), timeout=120, interval=0.1)
    return _job(url, job_id)


def test_a_live_request_is_answered_while_a_job_decodes_at_max_concurrency_1(tiny_handler, clip, long_audio,
                                                                             tmp_path):
    held = HeldHandler(tiny_handler, until_stopped=False)
    jobs = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1)
    with live_server(create_app(ServerSettings(max_concurrency=1), handler=held, job_settings=jobs)) as server:
        job_id = requests.post(f"{server.url}/jobs", params=LONG, data=long_audio).json()["id"]
        assert held.held.wait(60)
        running = _job(server.url, job_id)
        assert running["status"] == "running"
        progress = running["progress"]
        assert {key: progress[key] for key in ("stage", "windows_done", "windows_total")} == {
            "stage": "decoding", "windows_done": 1, "windows_total": WINDOWS}
        # the first window's audio is done, and the speed is what it took since the job started
        assert 0 < progress["audio_s_done"] <= 30 and progress["audio_minutes_per_minute"] > 0
        live = requests.post(f"{server.url}/predict", data=clip, timeout=60)  # the job holds its own slot
        assert live.status_code == 200 and live.json()["text"] == TEXT
        assert _job(server.url, job_id)["progress"]["windows_done"] == 1  # still held meanwhile
        held.release.set()
        done = _finished(server.url, job_id)
    assert done["status"] == "succeeded" and "progress" not in done
    assert "quarterly numbers" in done["result"]["text"].lower()
    assert [done for n, done, _ in held.reports if n == 0] == list(range(WINDOWS + 1))


def test_a_job_past_its_deadline_fails_with_the_reason_and_the_next_one_runs(tiny_handler, clip, long_audio,
                                                                            tmp_path):
    held = HeldHandler(tiny_handler, hold_at=0)  # held at its first report until its deadline
    jobs = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1, timeout_s=3.0)
    with live_server(create_app(ServerSettings(), handler=held, job_settings=jobs)) as server:
        late = requests.post(f"{server.url}/jobs", params=LONG, data=long_audio).json()["id"]
        after = requests.post(f"{server.url}/jobs", data=clip).json()["id"]
        failed = _finished(server.url, late)
        assert _finished(server.url, after)["result"]["text"] == TEXT  # no restart needed
    assert failed["status"] == "failed" and failed["error"]["code"] == "deadline_exceeded"
    assert failed["error"]["status"] == 504 and "JOBS_TIMEOUT_S" in failed["error"]["error"]
    # Stopped where it was held (or, on a machine too loaded to reach its first window in 3 s, before it).
    assert re.search(rf"after 0 of ({WINDOWS}|0) windows", failed["error"]["error"]) and held.windows_done(0) == 0


def test_deleting_a_running_job_stops_its_decode_and_the_next_one_runs(tiny_handler, clip, long_audio, tmp_path):
    held = HeldHandler(tiny_handler)  # held at its first window until its context is stopped
    jobs = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1)
    with live_server(create_app(ServerSettings(), handler=held, job_settings=jobs)) as server:
        deleted = requests.post(f"{server.url}/jobs", params=LONG, data=long_audio).json()["id"]
        after = requests.post(f"{server.url}/jobs", data=clip).json()["id"]
        assert held.held.wait(60)
        assert requests.delete(f"{server.url}/jobs/{deleted}", timeout=10).status_code == 204
        assert _finished(server.url, after)["result"]["text"] == TEXT  # the worker was freed
        assert requests.get(f"{server.url}/jobs/{deleted}", timeout=10).status_code == 404
    assert held.contexts[0].stop_reason is not None and held.windows_done(0) == 1  # stopped where it was held


def test_progress_counts_the_windows_then_the_diarizing_stage(diarizing_handler):
    """The hook behind GET /jobs/{id}'s progress: every window in order, segments final and in time
    order at each report, then the diarizing stage (8 s in 4 s windows, one per batch)."""
    samples = decode_file((AUDIO / "dialogues" / "flite_meeting.flac").read_bytes(), max_seconds=600).samples
    reports = []
    context = DecodeContext(listeners=(reports.append,))
    result = diarizing_handler.run({"inputs": {"array": samples[: 8 * 16000], "sampling_rate": 16000},
                                    "parameters": {"chunk_length_s": 4, "batch_size": 1}}, context)
    stages = [(p.stage, p.windows_done) for p in reports]
    total = reports[0].windows_total
    assert total >= 2 and all(p.windows_total == total for p in reports)
    assert stages == [("decoding", n) for n in range(total + 1)] + [("diarizing", total)]
    for before, after in itertools.pairwise(reports):  # each report only adds segments after the last
        assert after.segments[: len(before.segments)] == before.segments
    assert any(p.segments for p in reports[:total])  # segments before the last window is decoded
    starts = [segment.start for segment in reports[-1].segments]
    assert starts == sorted(starts) and len(reports[-1].segments) == len(result["chunks"]) and result["speakers"]


def test_shutdown_stops_a_running_job_at_its_next_window_and_queues_it_again(tiny_handler, long_audio, tmp_path):
    held = HeldHandler(tiny_handler)  # held until the shutdown stops it
    jobs = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1)
    server = LiveServer(create_app(ServerSettings(), handler=held, job_settings=jobs)).start()
    try:
        job_id = requests.post(f"{server.url}/jobs", params=LONG, data=long_audio).json()["id"]
        assert held.held.wait(60)
    finally:
        server.stop()  # what SIGTERM does (the real signal: the next test)
    store = open_store(jobs.db)
    job = store.get(job_id)
    store.close()
    assert (job.status, job.attempts, job.started_at) == ("queued", 0, None)  # this start does not count
    assert os.path.exists(job.input_path) and held.windows_done(0) == 1


def test_a_job_stuck_in_its_window_at_shutdown_is_queued_again(tiny_handler, long_audio, tmp_path):
    """Its worker task is cancelled after JOBS_STOP_TIMEOUT_S: the job is queued again, not left running."""
    held = HeldHandler(tiny_handler, until_stopped=False)  # inside its second window until released
    jobs = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1, stop_timeout_s=0.2)
    server = LiveServer(create_app(ServerSettings(), handler=held, job_settings=jobs)).start()
    try:
        job_id = requests.post(f"{server.url}/jobs", params=LONG, data=long_audio).json()["id"]
        assert held.held.wait(60)
        server.stop()
        assert not server.thread.is_alive() and not held.release.is_set()  # stopped while the window ran
    finally:
        held.release.set()  # the abandoned window ends (its decode stops there: shutdown)
    store = open_store(jobs.db)
    job = store.get(job_id)
    store.close()
    assert (job.status, job.attempts) == ("queued", 0) and os.path.exists(job.input_path)


def test_sigterm_with_a_job_running_loses_nothing(tmp_path):
    """A real server process and a real SIGTERM, sent after the job's first window of 13: the job stops at
    its next window and is queued again with its upload (a job that finished first would also lose
    nothing, but could not tell whether the shutdown re-queues: 12 windows left are never that fast)."""
    db, port = tmp_path / "jobs.sqlite", free_port()
    url = f"http://127.0.0.1:{port}"
    cache = os.environ.get("TEST_MODEL_CACHE", os.path.expanduser("~/.cache/whisper-endpoint"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MODEL_CACHE_DIR": cache, "ASR_MODEL": "embedded:tiny.en",
           "PORT": str(port), "HOST": "127.0.0.1", "JOBS_DB": str(db), "JOBS_POLL_S": "0.2", "OMP_NUM_THREADS": "1"}
    audio = (AUDIO / "dialogues" / "fillets_cave.flac").read_bytes()  # 125 s: 13 windows
    with (tmp_path / "server.log").open("w") as log:
        server = subprocess.Popen([sys.executable, "-m", "whisper_endpoint.serving"], cwd=ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until(lambda: _health(url) == 200, timeout=120, interval=0.2)
            job_id = requests.post(f"{url}/jobs", params=LONG, data=audio).json()["id"]
            wait_until(lambda: _decoding(url, job_id), timeout=60, interval=0.05)
            server.send_signal(signal.SIGTERM)
            assert server.wait(60) == -signal.SIGTERM  # uvicorn shuts down, then re-raises the signal
        finally:
            if server.poll() is None:
                server.kill()
    store = open_store(db)
    job = store.get(job_id)
    store.close()
    log_text = (tmp_path / "server.log").read_text()
    assert "Application shutdown complete" in log_text, log_text  # the lifespan's shutdown ran
    assert (job.status, job.attempts) == ("queued", 0), log_text  # it runs again after the restart
    assert os.path.exists(job.input_path)
    stopped_after = int(re.search(r"stopped for the shutdown after (\d+) windows", log_text).group(1))
    assert 1 <= stopped_after < 13


def _decoding(url: str, job_id: str) -> bool:
    """A window decoded (a job that ended instead fails the test at once)."""
    job = _job(url, job_id)
    assert job["status"] in ("queued", "running"), job
    return job.get("progress", {}).get("windows_done", 0) >= 1


def _health(url: str) -> int | None:
    try:
        return requests.get(f"{url}/health", timeout=2).status_code
    except requests.RequestException:
        return None


def test_health_is_answered_while_a_large_upload_is_stored(tiny_handler, tmp_path, monkeypatch):
    storing, stored = threading.Event(), threading.Event()
    real_fsync = uploads.fsync

    def slow_disk(fd):  # a disk that takes its time to persist the upload
        storing.set()
        assert stored.wait(30)
        real_fsync(fd)

    monkeypatch.setattr(uploads, "fsync", slow_disk)
    jobs = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1)
    body = os.urandom(8 * 1024 * 1024)  # 8 MiB; not audio, so its job fails at once
    with live_server(create_app(ServerSettings(), handler=tiny_handler, job_settings=jobs)) as server:
        with ThreadPoolExecutor(1) as pool:
            submitted = pool.submit(requests.post, f"{server.url}/jobs", data=body,
                                    headers={"Content-Type": "audio/flac"}, timeout=60)
            assert storing.wait(60)
            assert requests.get(f"{server.url}/health", timeout=10).status_code == 200  # the loop is free
            assert not submitted.done()
            stored.set()
            response = submitted.result()
        assert response.status_code == 202
        assert _finished(server.url, response.json()["id"])["error"]["code"] == "undecodable_audio"


# --- callbacks ---------------------------------------------------------------------------------


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append((self.path, self.headers["Host"]))
        if self.path == "/moved":
            self.send_response(307)
            self.send_header("Location", "/elsewhere")
        else:
            self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hook():
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    receiver.seen = []
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    yield receiver
    receiver.shutdown()


def test_a_callback_redirect_is_not_followed(hook):
    port = hook.server_address[1]
    status = asyncio.run(deliver(f"http://127.0.0.1:{port}/moved", {"id": "j"}, timeout_s=5, attempts=1,
                                 allow_internal=True))
    assert status == "failed: HTTP 307"
    assert hook.seen == [("/moved", f"127.0.0.1:{port}")]  # nothing was sent to /elsewhere


def test_a_callback_goes_to_the_address_that_was_checked(hook, monkeypatch):
    """DNS rebinding: the name answers the receiver's address once, then another; one lookup, one address."""
    port, real = hook.server_address[1], socket.getaddrinfo
    lookups = []

    def rebinding_dns(host, *args, **kwargs):
        if host != "hook.test":
            return real(host, *args, **kwargs)
        lookups.append(host)
        address = "127.0.0.1" if len(lookups) == 1 else "127.0.0.2"  # nothing listens on the second
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    status = asyncio.run(deliver(f"http://hook.test:{port}/done", {"id": "j"}, timeout_s=5, attempts=2,
                                 allow_internal=True))
    assert status == "delivered" and lookups == ["hook.test"]
    assert hook.seen == [("/done", f"hook.test:{port}")]  # the URL's name in Host, the checked address dialled
