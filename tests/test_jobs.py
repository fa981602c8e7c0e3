"""Async jobs on the server: POST /jobs -> 202, GET /jobs/{id} until done, callbacks, SQLite that
survives a restart (a real server process killed mid-job), and the server's limits and errors.

The in-process tests share one uvicorn (tiny.en, the session's handler) with its own job database;
callbacks go to a small HTTP server on loopback that records what it receives.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests

from support.paths import ROOT, AUDIO
from support.serving import TEXT, free_port, live_server, stop_process, wait_until
from whisper_endpoint.jobs import JobSettings, open_store
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import MB, ServerSettings

API_KEY = "test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def job_settings(tmp_path_factory) -> JobSettings:
    # The callback receiver listens on loopback: an internal address, allowed here on purpose.
    return JobSettings(db=tmp_path_factory.mktemp("jobs") / "jobs.sqlite", poll_s=0.2, max_body_bytes=MB,
                       callback_allow_internal=True)


@pytest.fixture(scope="module")
def server(tiny_handler, job_settings):
    app = create_app(ServerSettings(body_timeout_s=1.0), handler=tiny_handler, job_settings=job_settings)
    with live_server(app) as running:
        yield running


def finished(url: str, job_id: str, timeout: float = 120) -> dict:
    state = {}

    def done() -> bool:
        state.update(requests.get(f"{url}/jobs/{job_id}", timeout=5).json())
        return state["status"] in ("succeeded", "failed")

    wait_until(done, timeout=timeout, interval=0.1)
    return state


def test_a_job_gives_the_same_result_as_predict_and_calls_back(server, clip, callbacks):
    query = {"return_timestamps": "word", "callback_url": callbacks.url}
    response = requests.post(f"{server.url}/jobs", params=query, data=clip, headers={"Content-Type": "audio/flac"})
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] == "queued" and response.headers["Location"] == job["url"] == f"/jobs/{job['id']}"
    state = finished(server.url, job["id"])
    assert state["status"] == "succeeded" and state["attempts"] == 1
    direct = requests.post(f"{server.url}/predict?return_timestamps=word", data=clip, timeout=60).json()
    assert state["result"] == direct and direct["text"] == TEXT
    notified = callbacks.received.get(timeout=30)
    assert (notified["id"], notified["status"], notified["result"]) == (job["id"], "succeeded", direct)
    wait_until(lambda: requests.get(f"{server.url}/jobs/{job['id']}").json()["callback"]["status"] == "delivered")


def test_a_callback_token_is_never_echoed(server, clip, callbacks):
    secret = "tok_0123456789abcdef"
    url = f"http://hook:{secret}@127.0.0.1:{callbacks.server_address[1]}/done?token={secret}"
    response = requests.post(f"{server.url}/jobs", params={"callback_url": url}, data=clip)
    assert response.status_code == 202 and secret not in response.text
    state = finished(server.url, response.json()["id"])
    notified = callbacks.received.get(timeout=30)
    assert notified["id"] == state["id"]
    assert state["callback"]["url"] == f"http://127.0.0.1:{callbacks.server_address[1]}/..."  # the path may be the secret
    assert secret not in json.dumps(state) and secret not in json.dumps(notified)


def test_a_json_payload_job(server, clip):
    body = {"inputs": base64.b64encode(clip).decode(), "parameters": {"return_timestamps": "none"}}
    response = requests.post(f"{server.url}/jobs", json=body)
    assert response.status_code == 202, response.text
    state = finished(server.url, response.json()["id"])
    assert state["result"]["text"] == TEXT and state["result"]["chunks"] == []


def test_undecodable_audio_fails_the_job_with_the_error_and_calls_back(server, callbacks):
    response = requests.post(f"{server.url}/jobs", params={"callback_url": callbacks.url}, data=b"RIFF" + b"\1" * 500)
    assert response.status_code == 202
    state = finished(server.url, response.json()["id"])
    assert state["status"] == "failed" and "result" not in state
    assert (state["error"]["status"], state["error"]["code"]) == (415, "undecodable_audio")
    notified = callbacks.received.get(timeout=30)
    assert (notified["status"], notified["error"]) == ("failed", state["error"])


def test_delete_forgets_a_job(server, clip):
    job_id = requests.post(f"{server.url}/jobs", data=clip).json()["id"]
    finished(server.url, job_id)
    assert requests.delete(f"{server.url}/jobs/{job_id}").status_code == 204
    gone = requests.get(f"{server.url}/jobs/{job_id}")
    assert gone.status_code == 404 and gone.json()["code"] == "job_not_found"
    assert requests.delete(f"{server.url}/jobs/{job_id}").status_code == 404


@pytest.mark.parametrize(
    "query, body, content_type, status, code",
    [
        ({}, b"hello", "text/plain", 415, "unsupported_media_type"),
        ({"beam_size": "99"}, None, "audio/flac", 422, "invalid_parameter"),
        ({"callback_url": "ftp://example.invalid/x"}, None, "audio/flac", 422, "invalid_parameter"),
        ({"callback_url": "/relative"}, None, "audio/flac", 422, "invalid_parameter"),
        ({}, b"", "audio/flac", 400, "empty_audio"),
        ({}, b"{not json", "application/json", 400, "invalid_body"),
        ({}, b'{"parameters": {}}', "application/json", 400, "missing_inputs"),
        ({}, b'{"inputs": "x", "parameters": {"task": "dance"}}', "application/json", 422, "invalid_parameter"),
        ({}, b"\0" * (MB + 1), "audio/flac", 413, "body_too_large"),
    ],
)
def test_bad_submissions_are_refused_before_a_job_exists(
    server, clip, job_settings, query, body, content_type, status, code
):
    store = open_store(job_settings.db)
    before = store.count("queued") + store.count("running") + store.count("succeeded") + store.count("failed")
    response = requests.post(f"{server.url}/jobs", params=query, data=clip if body is None else body,
                             headers={"Content-Type": content_type})
    assert (response.status_code, response.json()["code"]) == (status, code), response.text
    after = store.count("queued") + store.count("running") + store.count("succeeded") + store.count("failed")
    store.close()
    assert after == before
    assert not list(job_settings.uploads.glob("*.upload"))  # nothing left on disk either


def test_unknown_job_is_404(server):
    response = requests.get(f"{server.url}/jobs/nope")
    assert response.status_code == 404 and "JOBS_TTL_S" in response.json()["error"]


def test_jobs_wait_for_the_model_and_the_queue_has_a_limit(tiny_handler, clip, tmp_path):
    loaded = threading.Event()

    def slow_load():
        loaded.wait(60)
        return tiny_handler

    settings = JobSettings(db=tmp_path / "jobs.sqlite", poll_s=0.1, max_queued=1)
    with live_server(create_app(ServerSettings(), load=slow_load, job_settings=settings)) as running:
        first = requests.post(f"{running.url}/jobs", data=clip)
        assert first.status_code == 202  # accepted while the model loads
        full = requests.post(f"{running.url}/jobs", data=clip)
        assert (full.status_code, full.json()["code"]) == (429, "queue_full") and full.headers["Retry-After"]
        time.sleep(0.3)
        assert requests.get(f"{running.url}/jobs/{first.json()['id']}").json()["status"] == "queued"
        loaded.set()
        assert finished(running.url, first.json()["id"])["result"]["text"] == TEXT


def test_api_keys_guard_the_job_routes(tiny_handler, clip, tmp_path):
    settings = ServerSettings(api_keys=API_KEY)
    app = create_app(settings, handler=tiny_handler, job_settings=JobSettings(db=tmp_path / "j.sqlite"))
    with live_server(app) as running:
        assert requests.post(f"{running.url}/jobs", data=clip).status_code == 401
        assert requests.get(f"{running.url}/jobs/x").status_code == 401
        accepted = requests.post(f"{running.url}/jobs", data=clip, headers={"Authorization": f"Bearer {API_KEY}"})
        assert accepted.status_code == 202


def test_jobs_can_be_switched_off(tiny_handler, tmp_path):
    settings = JobSettings(enabled=False, db=tmp_path / "off.sqlite")
    with live_server(create_app(ServerSettings(), handler=tiny_handler, job_settings=settings)) as running:
        assert requests.post(f"{running.url}/jobs", data=b"x").status_code == 404
    assert not settings.db.exists()


# --- a real server process, killed mid-job --------------------------------------------------------


def _start_server(port: int, db, log, **settings: str):
    cache = os.environ.get("TEST_MODEL_CACHE", os.path.expanduser("~/.cache/whisper-endpoint"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MODEL_CACHE_DIR": cache, "ASR_MODEL": "embedded:tiny.en",
           "PORT": str(port), "HOST": "127.0.0.1", "JOBS_DB": str(db), "JOBS_POLL_S": "0.2", "OMP_NUM_THREADS": "1",
           **settings}
    return subprocess.Popen([sys.executable, "-m", "whisper_endpoint.serving"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def _status(url: str) -> int | None:
    try:
        return requests.get(url, timeout=2).status_code
    except requests.RequestException:  # not listening yet, or too busy loading to answer in time
        return None


@pytest.mark.slow  # two server processes (_start_server)
def test_jobs_survive_a_killed_server_and_resume_after_their_last_block(tmp_path, clip):
    """SIGKILL while a job decodes its third block and another waits; a new process on the same SQLite file
    finishes both, the first from its third block on, with the result an uninterrupted run gives."""
    db, port = tmp_path / "jobs.sqlite", free_port()
    url = f"http://127.0.0.1:{port}"
    long_audio = (AUDIO / "dialogues" / "flite_meeting.flac").read_bytes()  # 36 s: four blocks of 9 s
    log_path = tmp_path / "server.log"
    log = log_path.open("w")
    first = _start_server(port, db, log, BLOCK_SECONDS="10")
    try:
        wait_until(lambda: _status(f"{url}/health") == 200, timeout=120, interval=0.2)
        running = requests.post(f"{url}/jobs", data=long_audio, params={"return_timestamps": "none"}).json()["id"]
        waiting = requests.post(f"{url}/jobs", data=clip).json()["id"]
        wait_until(lambda: _blocks_done(url, running) >= 2, interval=0.01)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    store = open_store(db)
    assert (store.get(running).status, store.get(waiting).status) == ("running", "queued")  # as the kill left them
    store.close()
    second = _start_server(port, db, log, BLOCK_SECONDS="10")
    try:
        wait_until(lambda: _status(f"{url}/health") == 200, timeout=120, interval=0.2)
        resumed = finished(url, running)
        assert resumed["status"] == "succeeded" and resumed["attempts"] == 2
        assert "quarterly numbers" in resumed["result"]["text"].lower()
        assert resumed["result"]["decoding"]["blocks"] == 4
        assert finished(url, waiting)["result"]["text"] == TEXT
        again = requests.post(f"{url}/jobs", data=long_audio, params={"return_timestamps": "none"}).json()["id"]
        assert finished(url, again)["result"] == resumed["result"]  # as if it had never been interrupted
    finally:
        stop_process(second, timeout=60)
        log.close()
    taken = [line for line in log_path.read_text().splitlines() if f"job {running}: block" in line
             and "taken from the store" in line]
    assert len(taken) >= 2  # blocks 0 and 1 (at least) came from the store, not decoded again


def _blocks_done(url: str, job_id: str) -> int:
    job = requests.get(f"{url}/jobs/{job_id}").json()
    if job["status"] == "succeeded":
        raise AssertionError("the job finished before the server could be killed inside it")
    return (job.get("progress") or {}).get("blocks_done", 0)


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/meta-data", "http://10.0.0.7:8080/hook",
                                 "http://localhost:9000/", "http://[::1]/x", "https://192.168.1.1/"])
def test_callbacks_to_internal_addresses_are_refused_unless_allowed(url, tiny_handler, tmp_path):
    """A stranger's callback_url must not make the server call its own network (SSRF)."""
    app = create_app(ServerSettings(), handler=tiny_handler, job_settings=JobSettings(db=tmp_path / "j.sqlite"))
    with live_server(app) as running:
        response = requests.post(f"{running.url}/jobs", params={"callback_url": url}, data=b"x",
                                 headers={"Content-Type": "audio/flac"})
    assert response.status_code == 422 and "JOBS_CALLBACK_ALLOW_INTERNAL" in response.json()["error"]


def test_delivery_checks_the_address_again():
    from whisper_endpoint.jobs.callbacks import deliver

    status = asyncio.run(deliver("http://localhost:9/x", {"id": "j"}, timeout_s=1, attempts=1))
    assert status.startswith("refused: internal address")
