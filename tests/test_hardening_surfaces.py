"""Issue 35: the surfaces a client or a callback host can push on (callbacks, live sessions,
POST /formats, large job bodies, logs, the jobs' disk) stay bounded, and /health keeps answering
within 1 s through each attack (timed while the attack runs).

Each attacker is real: a raw-socket callback host that never answers, trickles or floods; a
WebSocket client; big bodies over loopback.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pytest
import requests

from support.serving import live_server, wait_until
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.jobs.callbacks import MAX_RESPONSE_HEAD, deliver
from whisper_endpoint.jobs.deliveries import CALLBACK_CONCURRENCY
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

HEALTH_S = 1.0  # the Dockerfile's health check gives up after 3 s; answers here must take under 1 s


class Attack:
    """Runs ``attack`` on a thread while /health is asked again and again (``status``: its answer, 503 while
    a model loads): the slowest answer must come within HEALTH_S."""

    def __init__(self, url: str, status: int = 200):
        self.url, self.status, self.slowest, self.answers = url, status, 0.0, 0

    def during(self, attack):
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(attack)
            while not future.done() or not self.answers:
                started = time.perf_counter()
                assert requests.get(f"{self.url}/health", timeout=10).status_code == self.status
                self.slowest = max(self.slowest, time.perf_counter() - started)
                self.answers += 1
                time.sleep(0.05)
            result = future.result()
        assert self.slowest < HEALTH_S, f"/health took {self.slowest:.2f} s during the attack"
        return result


# --- hostile callback hosts ------------------------------------------------------------------


class Host:
    """A callback host on loopback that reads the request, then: ``silent`` never answers, ``trickle``
    sends its status line a byte every 0.2 s, ``endless_head`` sends header lines without end, ``flood``
    answers 200 with an endless body (``sent`` counts what left it)."""

    def __init__(self, mode: str):
        self.mode, self.sent, self.connections = mode, 0, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        try:
            conn.recv(65536)
            if self.mode == "trickle":
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                    conn.sendall(bytes([byte]))
                    time.sleep(0.2)
            elif self.mode == "endless_head":
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while self.sent < 10**9:
                    conn.sendall(b"X-Pad: " + b"a" * 1000 + b"\r\n")
                    self.sent += 1009
            elif self.mode == "flood":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1000000000\r\n\r\n")
                block = b"\0" * 65536
                while self.sent < 10**9:
                    conn.sendall(block)
                    self.sent += len(block)
            else:
                time.sleep(3600)
        except OSError:
            pass

    def close(self):
        self.sock.close()
        for conn in self.open:
            conn.close()


@contextmanager
def host(mode: str):
    running = Host(mode)
    try:
        yield running
    finally:
        running.close()


def test_a_trickling_callback_host_gets_one_deadline_for_the_whole_exchange():
    """Each byte comes within the timeout, the answer does not: the attempt ends at the timeout."""
    with host("trickle") as hook:
        started = time.perf_counter()
        status = asyncio.run(deliver(hook.url, {"id": "j"}, timeout_s=1, attempts=1, allow_internal=True))
        took = time.perf_counter() - started
    assert status == "failed: no answer within 1 s (JOBS_CALLBACK_TIMEOUT_S)" and took < 2.0


def test_a_flooding_callback_host_is_read_no_further_than_its_status():
    """An answer with a gigabyte of (gzip) body: delivered on its status line, the body never read."""
    with host("flood") as hook:
        status = asyncio.run(deliver(hook.url, {"id": "j"}, timeout_s=5, attempts=1, allow_internal=True))
        time.sleep(0.3)  # what the host could still push into the closed connection's buffers
    assert status == "delivered"
    assert hook.sent < 32 * 1024 * 1024  # the socket buffers' worth, not the gigabyte


def test_an_endless_answer_head_is_cut_at_its_byte_cap():
    with host("endless_head") as hook:
        status = asyncio.run(deliver(hook.url, {"id": "j"}, timeout_s=5, attempts=1, allow_internal=True))
        time.sleep(0.3)
    assert status.startswith("failed: ") and "JOBS_CALLBACK_TIMEOUT_S" not in status  # cut, not timed out
    assert hook.sent < 32 * 1024 * 1024 + MAX_RESPONSE_HEAD


@pytest.fixture
def silent_host():
    with host("silent") as hook:
        yield hook


def test_stalled_callbacks_leave_the_jobs_api_the_page_and_shutdown_alone(tiny_handler, silent_host, tmp_path):
    """45 jobs (more than anyio's 40 threads) whose callback host never answers: the jobs API, the page
    and /health keep answering within 1 s, and the server stops at once."""
    jobs = JobSettings(db=tmp_path / "j.sqlite", poll_s=0.05, callback_allow_internal=True, callback_timeout_s=30,
                       callback_attempts=1)
    app = create_app(ServerSettings(), handler=tiny_handler, job_settings=jobs)
    server = live_server(app)
    running = server.__enter__()
    try:
        ids = []
        for _ in range(45):  # undecodable: each fails at once, and its callback goes to the silent host
            response = requests.post(f"{running.url}/jobs", params={"callback_url": silent_host.url},
                                     data=b"RIFF" + b"\1" * 64, headers={"Content-Type": "audio/wav"}, timeout=5)
            assert response.status_code == 202
            ids.append(response.json()["id"])
        wait_until(lambda: silent_host.connections >= CALLBACK_CONCURRENCY, timeout=30)  # the rest wait their turn
        for path in (f"/jobs/{ids[-1]}", "/ui", "/health"):
            started = time.perf_counter()
            assert requests.get(f"{running.url}{path}", timeout=5).status_code == 200
            assert time.perf_counter() - started < HEALTH_S, path
    finally:
        started = time.perf_counter()
        server.__exit__(None, None, None)
    assert time.perf_counter() - started < 5  # the callbacks were cancelled, not waited for


# --- callback_url at submission ------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tiny_handler, tmp_path_factory):
    jobs = JobSettings(db=tmp_path_factory.mktemp("jobs") / "jobs.sqlite", poll_s=0.1)
    app = create_app(ServerSettings(body_timeout_s=2.0), handler=tiny_handler, job_settings=jobs)
    with live_server(app) as running:
        yield running


@pytest.mark.parametrize("url", [
    "http://[::1/h", "http://host.example:99999/h", "http://host.example:0/h", "http://host.example/a b",
    "http://host.example/\tx", "https://host.example/" + "a" * 3000,
    # IPv6 that reaches IPv4 space: NAT64 of 127.0.0.1 and 169.254.169.254, 6to4 of 10.0.0.1, local NAT64
    "http://[64:ff9b::7f00:1]/h", "http://[64:ff9b::a9fe:a9fe]/h", "http://[2002:a00:1::]/h", "http://[64:ff9b:1::1]/",
])
def test_every_bad_callback_url_is_a_422_naming_it_and_no_job_is_kept(server, url):
    response = requests.post(f"{server.url}/jobs", params={"callback_url": url}, data=b"x",
                             headers={"Content-Type": "audio/flac"}, timeout=10)
    body = response.json()
    assert response.status_code == 422 and body["code"] == "invalid_parameter", body
    assert "callback_url" in body["error"]


def test_translated_ipv6_callbacks_are_allowed_on_a_trusted_network():
    from whisper_endpoint.jobs.callbacks import url_problem

    for url in ("http://[64:ff9b::7f00:1]/h", "http://[2002:a00:1::]/h"):
        assert url_problem(url, allow_internal=True) is None
        assert "JOBS_CALLBACK_ALLOW_INTERNAL" in url_problem(url, allow_internal=False)


# --- what the open routes say of a failed load ------------------------------------------------

KEY = "k" * 8 + "-0123456789abcdef"


def test_a_failed_loads_reason_is_shown_only_with_the_key():
    """/ui/config.json, /health and /ping are open: the reason (which may name server paths) needs the key."""
    from whisper_endpoint.core.errors import ModelLoadError

    def load():
        raise ModelLoadError("ASR_MODEL='/srv/secret-volume/models/nope' is not a model directory")

    app = create_app(ServerSettings(api_keys=KEY), load=load, job_settings=JobSettings(enabled=False))
    with live_server(app) as running:
        wait_until(lambda: requests.get(f"{running.url}/health", timeout=5).status_code == 503
                   and requests.get(f"{running.url}/ui/config.json", timeout=5).json()["load_error"])
        for path in ("/ui/config.json", "/health", "/ping"):
            stranger = requests.get(f"{running.url}{path}", timeout=5)
            assert "secret-volume" not in stranger.text and "model loading failed" in stranger.text, path
            keyed = requests.get(f"{running.url}{path}", headers={"Authorization": f"Bearer {KEY}"}, timeout=5)
            assert "secret-volume" in keyed.text, path


# --- secrets in the logs ----------------------------------------------------------------------


def test_keys_and_callback_tokens_are_masked_on_every_logger_as_serve_configures_them(tiny_handler):
    """create_app installs the API key, serve() its own settings after it; then a traceback holding the
    key, logged by any logger (uvicorn's included), and the access log's query string come out masked."""
    import io
    import logging

    from whisper_endpoint.serving.__main__ import configured

    token = "hooktoken-5b1c9e0d7a"
    app = create_app(ServerSettings(api_keys=KEY), handler=tiny_handler, job_settings=JobSettings(enabled=False))
    configured(app)
    out = io.StringIO()
    sink = logging.StreamHandler(out)
    names = ("whisper_endpoint.adapters.http", "whisper_endpoint.jobs.worker", "uvicorn.error", "some.library")
    for name in (*names, "uvicorn.access"):
        logging.getLogger(name).addHandler(sink)
    try:
        for name in names:
            try:
                raise RuntimeError(f"request failed with Authorization: Bearer {KEY}")
            except RuntimeError:
                logging.getLogger(name).exception("a failure in %s (key %s)", name, KEY)
        logging.getLogger("uvicorn.access").info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST",
            f"/jobs?language=en&callback_url=https://u:{token}@hooks.example/{token}?t={token}", "1.1", 202)
    finally:
        for name in (*names, "uvicorn.access"):
            logging.getLogger(name).removeHandler(sink)
    text = out.getvalue()
    assert KEY not in text and token not in text, text
    assert text.count("***") >= 2 * len(names) and "RuntimeError" in text  # the tracebacks are there, masked
    assert "POST /jobs?language=***&callback_url=***" in text


# --- POST /formats/{name} -------------------------------------------------------------------


def transcript_body(chunks: int) -> bytes:
    one = b'{"text":" word","timestamp":[1.5,2.25],"speaker":"SPEAKER_00"}'
    return b'{"text":"t","chunks":[' + b",".join([one] * chunks) + b"]}"


def test_a_huge_transcript_is_refused_at_its_byte_limit_and_health_keeps_answering(server):
    body = transcript_body(400_000)  # 25 MB: under MAX_BODY_BYTES, which bounded this route before
    response = Attack(server.url).during(
        lambda: requests.post(f"{server.url}/formats/srt", data=body, timeout=60))
    assert response.status_code == 413 and "FORMATS_MAX_BODY_BYTES" in response.json()["error"]


def test_a_transcript_with_too_many_chunks_is_refused_naming_the_limit(tiny_handler, tmp_path):
    app = create_app(ServerSettings(formats_max_items=1000), handler=tiny_handler,
                     job_settings=JobSettings(enabled=False))
    with live_server(app) as running:
        assert requests.post(f"{running.url}/formats/vtt", data=transcript_body(1000), timeout=10).status_code == 200
        response = requests.post(f"{running.url}/formats/vtt", data=transcript_body(1001), timeout=10)
    assert response.status_code == 413 and "more than 1000" in response.json()["error"]
    assert "FORMATS_MAX_ITEMS" in response.json()["error"]


@pytest.mark.slow  # the largest transcript rendered
def test_the_largest_transcript_renders_off_the_event_loop(server):
    """At the limits (100 000 chunks, 6 MB), rendering takes seconds of CPU: /health answers meanwhile."""
    body = transcript_body(99_999)
    response = Attack(server.url).during(lambda: requests.post(f"{server.url}/formats/srt", data=body, timeout=60))
    # Readable cues (the default): the words are cut into cues of two lines; every word is there once.
    assert response.status_code == 200 and response.text.count("word") == 99_999 and "-->" in response.text


# --- live sessions ----------------------------------------------------------------------------

MANUAL_16K = {"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
    "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None}}}}


@pytest.fixture
def held_realtime(tiny_handler):
    """A server whose first decode holds before its first window (until its context is stopped): live
    sessions then wait for a transcript that does not come, by order, not timing."""
    from support.serving import HeldHandler

    held = HeldHandler(tiny_handler, hold_at=0, holds=1, until_stopped=True)
    settings = ServerSettings(realtime_idle_timeout_s=1.0, realtime_max_backlog_s=30)
    with live_server(create_app(settings, handler=held, job_settings=JobSettings(enabled=False))) as running:
        running.held = held
        yield running
    held.release.set()


def speech(seconds: float):
    import numpy as np

    from support.audio import pcm16
    from tests.realtime_client import AUDIO

    clip = pcm16(AUDIO / "clips" / "asterisk_dictate_play_help.flac", 16000)
    return np.resize(clip, int(seconds * 16000))


def test_a_live_sessions_backlog_is_bounded_and_past_it_audio_is_refused(held_realtime):
    from tests.realtime_client import Session, append

    url = held_realtime.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    with Session(url) as session:
        session.send(MANUAL_16K)
        session.send(append(speech(20)))
        session.send({"type": "input_audio_buffer.commit"})
        held_realtime.held.held.wait(20)  # the first utterance's decode is stuck: nothing drains
        for _ in range(3):
            session.send(append(speech(6)))  # 20 s committed + 6 + 6: the second and third pass 30 s
        errors = session.wait_for("error", 2, timeout=10)
        assert [e["error"]["code"] for e in errors] == ["audio_backlog_full"] * 2
        assert "REALTIME_MAX_BACKLOG_S=30" in errors[0]["error"]["message"]
        assert requests.get(f"{held_realtime.url}/health", timeout=HEALTH_S).status_code == 200


def test_a_session_whose_transcript_never_comes_still_ends_at_its_idle_timeout(held_realtime):
    """REALTIME_IDLE_TIMEOUT_S=1 while the committed utterance's decode hangs: the session closes, and its
    decode is stopped (its slot frees) rather than held for the departed client."""
    from whisper_endpoint.core.decode_context import DISCONNECTED
    from tests.realtime_client import Session, append

    url = held_realtime.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    with Session(url) as session:
        session.send(MANUAL_16K)
        session.send(append(speech(3)))
        session.send({"type": "input_audio_buffer.commit"})
        assert held_realtime.held.held.wait(20)
        silent_from = time.monotonic()
        assert Attack(held_realtime.url).during(lambda: session.close_code(timeout=6)) == 1000
        assert time.monotonic() - silent_from < 4
        assert session.of("error")[0]["error"]["code"] == "idle_timeout"
    wait_until(lambda: held_realtime.held.contexts[0].stop_reason == DISCONNECTED, timeout=5)


# --- large JSON job bodies ---------------------------------------------------------------------


def samples_json(count: int, rate: int = 16000) -> bytes:
    import numpy as np

    samples = np.random.default_rng(7).uniform(-0.5, 0.5, count).astype(np.float32)
    return ('{"inputs": {"array": [' + ",".join(f"{v:.6f}" for v in samples.tolist())
            + f'], "sampling_rate": {rate}}}}}').encode()


def test_a_json_array_job_is_parsed_once_off_the_loop_and_stored_as_samples(server, tmp_path):
    """A 30 MB array body (the worst case: a Python float per sample), at a rate the handler refuses, so the
    job fails as soon as its payload is read: /health answers through its submission and its pick-up,
    and its upload waits on disk as float32 samples, not as JSON."""
    body = samples_json(3_000_000, rate=999)

    def submit_and_finish():
        response = requests.post(f"{server.url}/jobs", data=body, headers={"Content-Type": "application/json"},
                                 timeout=60)
        assert response.status_code == 202, response.text
        job_id = response.json()["id"]
        wait_until(lambda: requests.get(f"{server.url}/jobs/{job_id}", timeout=10).json()["status"] == "failed",
                   timeout=60)
        return requests.get(f"{server.url}/jobs/{job_id}", timeout=10).json()

    job = Attack(server.url).during(submit_and_finish)
    assert job["error"]["code"] == "invalid_parameter" and "sampling_rate" in job["error"]["error"]


_MEASURE_STORE = """
import sys, threading
from pathlib import Path
import psutil
from whisper_endpoint.jobs import stored
path = Path(sys.argv[1])
warm = path.with_name("warm.upload")  # the lazy imports (languages, the parameters' checks) first
warm.write_bytes(b'{"inputs": {"array": [0.5, 0.25], "sampling_rate": 16000}, "parameters": {"language": "en"}}')
stored.store(warm, "application/json", {})
me, peak, done = psutil.Process(), [0], threading.Event()
before = me.memory_info().rss
def sample():  # the process's memory every 2 ms while the body is stored
    while not done.is_set():
        peak[0] = max(peak[0], me.memory_info().rss)
        done.wait(0.002)
sampler = threading.Thread(target=sample)
sampler.start()
kind, parameters = stored.store(path, "application/json", {"language": "en"})
done.set()
sampler.join()
print(kind, peak[0] - before)
"""


def test_a_json_job_body_is_decoded_into_a_fraction_of_the_memory_json_loads_takes(tmp_path):
    """Peak memory growth of a fresh process storing a 19 MB array body: measured 52 MB (the body's bytes
    and text, float32 samples), where json.loads' Python floats made it 119 MB; and the upload then holds
    float32 samples (4 bytes each), read back without parsing."""
    import os
    import subprocess
    import sys

    import numpy as np

    from support.paths import ROOT
    from whisper_endpoint.jobs import stored

    body = samples_json(2_000_000)
    path = tmp_path / "job.upload"
    path.write_bytes(body)
    out = subprocess.run([sys.executable, "-c", _MEASURE_STORE, str(path)], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True).stdout
    kind, growth = out.split()
    assert kind == stored.SAMPLES
    assert int(growth) < 4 * len(body), f"peak grew {int(growth) / 1e6:.0f} MB for a {len(body) / 1e6:.0f} MB body"
    assert path.stat().st_size < 8.1e6  # float32 samples on disk, not the JSON text
    again = stored.payload(path, kind, {"language": "en"})
    assert again["inputs"]["sampling_rate"] == 16000 and again["inputs"]["array"].dtype == np.float32
    assert len(again["inputs"]["array"]) == 2_000_000


def test_a_json_job_body_has_its_own_limit(tiny_handler, tmp_path):
    jobs = JobSettings(db=tmp_path / "j.sqlite", max_json_body_bytes=1000)
    with live_server(create_app(ServerSettings(), handler=tiny_handler, job_settings=jobs)) as running:
        response = requests.post(f"{running.url}/jobs", data=samples_json(1000),
                                 headers={"Content-Type": "application/json"}, timeout=10)
    assert response.status_code == 413 and "JOBS_MAX_JSON_BODY_BYTES" in response.json()["error"]


# --- the jobs' disk ----------------------------------------------------------------------------


def slow_body(size: int, pieces: int = 10, pause_s: float = 0.1):
    for _ in range(pieces):
        yield b"\1" * (size // pieces)
        time.sleep(pause_s)


@pytest.fixture
def loading_server(tmp_path):
    """A server whose model never finishes loading: submitted jobs stay queued."""
    loaded = threading.Event()

    def load():
        loaded.wait(60)
        raise RuntimeError("not loaded in this test")

    def start(**job_options):
        jobs = JobSettings(db=tmp_path / "j.sqlite", **job_options)
        return live_server(create_app(ServerSettings(), load=load, job_settings=jobs))

    yield start
    loaded.set()


def submit(url: str, body) -> requests.Response:
    return requests.post(f"{url}/jobs", data=body, headers={"Content-Type": "audio/flac"}, timeout=30)


def test_concurrent_uploads_cannot_all_pass_the_queue_bound(loading_server):
    """JOBS_MAX_QUEUED=2 and five uploads at once, each taking a second: two are taken, three are 429."""
    def five_at_once(url):
        with ThreadPoolExecutor(5) as pool:
            return sorted(r.status_code for r in pool.map(lambda _: submit(url, slow_body(10_000)), range(5)))

    with loading_server(max_queued=2) as running:
        statuses = Attack(running.url, status=503).during(lambda: five_at_once(running.url))
    assert statuses == [202, 202, 429, 429, 429]


def test_uploads_are_bounded_on_disk_together_and_a_deleted_job_gives_its_bytes_back(loading_server):
    with loading_server(max_disk_bytes=100_000) as running:
        first = submit(running.url, b"\1" * 60_000)
        assert first.status_code == 202
        refused = submit(running.url, slow_body(60_000))
        assert refused.status_code == 429 and "JOBS_MAX_DISK_BYTES" in refused.json()["error"]
        with ThreadPoolExecutor(2) as pool:  # counted as they arrive: two at once cannot both fit
            statuses = sorted(r.status_code for r in pool.map(lambda _: submit(running.url, slow_body(30_000)),
                                                               range(2)))
        assert statuses == [202, 429]
        assert requests.delete(f"{running.url}/jobs/{first.json()['id']}", timeout=10).status_code == 204
        assert submit(running.url, b"\1" * 60_000).status_code == 202


def test_an_upload_without_a_job_is_swept_at_start_up_and_the_upload_folder_is_synced(tmp_path, monkeypatch):
    """A crash between writing an upload and storing its row leaves an orphan: the next start removes it
    (and a rewrite's partial file), keeping the uploads of queued jobs. A 202'd upload's folder entry is
    fsynced, not only its bytes."""
    import os

    jobs_dir = tmp_path / "j.sqlite.uploads"
    jobs_dir.mkdir()
    (jobs_dir / "deadbeef.upload").write_bytes(b"orphan")
    (jobs_dir / "cafe.upload.partial").write_bytes(b"partial")
    from whisper_endpoint.jobs import uploads

    synced, real_fsync = [], uploads.fsync

    def recorded_fsync(descriptor):  # the real fsync, its files noted
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(uploads, "fsync", recorded_fsync)
    load = threading.Event()
    app = create_app(ServerSettings(), load=lambda: load.wait(60) and None,
                     job_settings=JobSettings(db=tmp_path / "j.sqlite"))
    try:
        with live_server(app) as running:
            wait_until(lambda: not (jobs_dir / "deadbeef.upload").exists(), timeout=10)
            assert not (jobs_dir / "cafe.upload.partial").exists()
            job = submit(running.url, b"\1" * 1000).json()
            upload = jobs_dir / f"{job['id']}.upload"
            assert upload.exists() and str(jobs_dir) in synced and synced.index(str(jobs_dir)) > synced.index(str(upload))
    finally:
        load.set()


# --- the stepped JSON decoder ----------------------------------------------------------------

LONG_RUN = "[" + ", ".join(f"{i / 7 - 300:.5f}" for i in range(4000)) + "]"


@pytest.mark.parametrize("text", [
    "{}", "[]", '"x"', "3", " null ", '{"a": [1, 2, 3], "b": {"c": "x", "d": []}}', "[[1, 2], [3]]",
    '{"a": [NaN, 1]}', '{"a": [1.5, "x", {"k": [2]}]}', '{"dup": 1, "dup": 2}', "[\n 1 ,\t2\n]",
    '{"inputs": {"array": ' + LONG_RUN + ', "sampling_rate": 16000}}', "[" + LONG_RUN + ", " + LONG_RUN + "]",
])
def test_the_stepped_decoder_reads_what_json_loads_reads(text):
    import json

    import numpy as np

    from whisper_endpoint.adapters.stepped_json import loads

    def plain(value):  # float32 runs back to lists, for the comparison
        if isinstance(value, np.ndarray):
            return [round(float(v), 2) for v in value]
        if isinstance(value, float):
            return round(value, 2) if value == value else "nan"
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    assert plain(loads(text, 10_000)) == plain(json.loads(text))


@pytest.mark.parametrize("text", ["", "{", '{"a":}', "[1,]", '{"a": 1,}', "[1 2]", '{"a": 1} x', '{"a" 1}',
                                  "[" + LONG_RUN[1:-1] + ",]", "[" + LONG_RUN[1:-1] + " 5]", "{'a': 1}"])
def test_the_stepped_decoder_refuses_what_json_loads_refuses(text):
    import json

    from whisper_endpoint.adapters.stepped_json import loads

    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads(text, 10_000)
