"""The HTTP server with real clients (requests, huggingface_hub.InferenceClient) against uvicorn on
loopback: toolkit routes, health and metrics, the bad-input table, the queue, graceful shutdown.

One server (tiny.en, the session's handler) serves the module; the queue and shutdown tests start
their own around a handler that waits for the test's signal, so their timing is deterministic.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
import socket
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from pydantic import SecretStr

from support.paths import CLIPS
from support.audio import clip_refs, decode_reference, read_clip
from support.serving import CLIP, TEXT, LiveServer, live_server, wait_until
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import MB, ServerSettings


@pytest.fixture(scope="module")
def server(tiny_handler):
    app = create_app(ServerSettings(body_timeout_s=1.0), handler=tiny_handler)
    with live_server(app) as running:
        yield running


def transcribe_ok(url: str, clip: bytes) -> None:
    """The check after every bad request: the server still answers a valid one."""
    response = requests.post(f"{url}/predict?return_timestamps=none", data=clip, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["text"] == TEXT


# --- valid requests, each client ---------------------------------------------------------------


def test_health_says_ok_with_the_model(server):
    response = requests.get(f"{server.url}/health", timeout=5)
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "model": "embedded:tiny.en"}


def test_json_base64_with_parameters(server, clip):
    body = {"inputs": base64.b64encode(clip).decode(), "parameters": {"return_timestamps": "word"}}
    response = requests.post(f"{server.url}/", json=body, timeout=60)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["text"] == clip_refs()[CLIP]
    assert [chunk["text"].strip() for chunk in result["chunks"]] == TEXT.split()
    assert all(isinstance(t, float) for chunk in result["chunks"] for t in chunk["timestamp"])


@pytest.mark.parametrize("content_type", [None, "audio/flac", "application/octet-stream"])
def test_binary_body_with_query_parameters(server, clip, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    response = requests.post(
        f"{server.url}/predict", params={"return_timestamps": "none", "beam_size": "2", "shout": "1"},
        data=clip, headers=headers, timeout=60,
    )
    assert response.request.headers.get("Content-Type") == content_type
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["text"] == TEXT and result["chunks"] == []
    assert result["warnings"] == ["ignored unknown parameter 'shout'"]


def test_a_truncated_upload_is_transcribed_and_said(server):
    """The first seventh of a FLAC posted as audio/flac looked like a short recording: now the answer says
    the file ends before the length its header declares."""
    data = read_clip("asterisk_vm-next.flac")
    response = requests.post(f"{server.url}/predict", data=data[: len(data) // 7],
                             headers={"Content-Type": "audio/flac"}, timeout=60)
    assert response.status_code == 200, response.text
    result = response.json()
    # What faster-whisper's own decoder makes of the same bytes, and of the whole file.
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "part.flac").write_bytes(data[: len(data) // 7])
        decoded = len(decode_reference(Path(folder) / "part.flac")) / 16000
    declared = len(decode_reference(CLIPS / "asterisk_vm-next.flac")) / 16000
    assert result["duration"] == pytest.approx(decoded, abs=0.001) and decoded < declared / 5
    assert any(f"declares {declared:.2f} s of audio but only {decoded:.2f} s decode" in w for w in result["warnings"])


def test_inference_client_raw_bytes_and_extra_body(server, clip, monkeypatch):
    from huggingface_hub import InferenceClient, constants

    # huggingface_hub's offline mode (HF_HUB_OFFLINE=1, set for the suite) blocks every request its
    # clients make, loopback included; its side calls go to HF_ENDPOINT, here the server (404).
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    client = InferenceClient(base_url=server.url)
    assert client.automatic_speech_recognition(clip).text == TEXT  # raw bytes, no content type
    words = client.automatic_speech_recognition(clip, extra_body={"return_timestamps": "word"})  # JSON + base64
    assert words.text == TEXT
    assert [chunk.text.strip() for chunk in words.chunks] == TEXT.split()


# --- the bad-input table -----------------------------------------------------------------------

def _post(path, **kwargs):
    def send(url, clip):
        return requests.post(f"{url}{path}", timeout=30, **kwargs)
    return send


def _json(body, path="/"):
    return _post(path, data=json.dumps(body), headers={"Content-Type": "application/json"})


def _stalled_upload(url, clip):
    """Content-Length promises more than is sent, and the client waits: 408 after BODY_TIMEOUT_S."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(_head("/predict", len(clip)) + clip[: len(clip) // 2])
        return _read_response(sock)


def _multipart(fields: dict, files: dict | None = None, path="/v1/audio/transcriptions"):
    return _post(path, data=fields, files=files)


def _truncated_multipart(url, clip):
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.flac\"\r\n"
            "Content-Type: audio/flac\r\n\r\n").encode() + clip[:1000]  # no closing boundary
    return requests.post(f"{url}/v1/audio/transcriptions", data=body, timeout=30,
                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


def _head(path: str, length: int) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: audio/flac\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


class _Response:
    def __init__(self, status: int, body: bytes, headers: dict):
        self.status_code, self.content, self.headers = status, body, headers

    def json(self):
        return json.loads(self.content)


def _read_response(sock) -> _Response:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        body += sock.recv(65536)
    return _Response(int(lines[0].split()[1]), body, headers)


def _chunks(size: int):
    for _ in range(size // MB + 1):
        yield b"\0" * MB


BAD_INPUTS = [
    # name, request, status, code
    ("json without inputs", _json({"parameters": {}}), 400, "missing_inputs"),
    ("inputs not base64", _json({"inputs": "%%% not base64 %%%"}), 400, "invalid_inputs"),
    ("body not JSON", _post("/", data=b"{inputs:", headers={"Content-Type": "application/json"}), 400, "invalid_body"),
    ("not audio", _post("/", data=b"this is plain text, not audio" * 10, headers={"Content-Type": "audio/wav"}),
     415, "undecodable_audio"),
    ("truncated file (header only)", lambda url, clip: requests.post(f"{url}/", data=clip[:40], timeout=30),
     415, "undecodable_audio"),
    ("empty body", _post("/", data=b"", headers={"Content-Type": "audio/flac"}), 400, "empty_audio"),
    ("wrong content type", _post("/", data=b"hello", headers={"Content-Type": "text/plain"}),
     415, "unsupported_media_type"),
    ("parameter out of range", lambda url, clip: requests.post(f"{url}/?beam_size=99", data=clip, timeout=30),
     422, "invalid_parameter"),
    ("parameter of the wrong type", _json({"inputs": "AAAA", "parameters": {"return_timestamps": "sometimes"}}),
     422, "invalid_parameter"),
    ("parameters not an object", _json({"inputs": "AAAA", "parameters": [1, 2]}), 422, "invalid_parameter"),
    ("oversize body (Content-Length)", _post("/", data=b"\0" * (25 * MB + 1), headers={"Content-Type": "audio/wav"}),
     413, "body_too_large"),
    ("oversize body (chunked)", lambda url, clip: requests.post(f"{url}/", data=_chunks(25 * MB), timeout=30),
     413, "body_too_large"),
    ("stalled upload", _stalled_upload, 408, "body_timeout"),
    ("unknown route", _post("/transcribe", data=b"x"), 404, "not_found"),
    ("wrong method", lambda url, clip: requests.get(f"{url}/predict", timeout=30), 405, "method_not_allowed"),
    ("openai: no file", _multipart({}, {"model": (None, "whisper-1")}), 400, "missing_inputs"),
    ("openai: file as a text field", _multipart({}, {"file": (None, "abc")}), 400, "invalid_inputs"),
    ("openai: url-encoded form", _multipart({"model": "whisper-1"}), 415, "unsupported_media_type"),
    ("openai: JSON instead of a form", _json({"file": "abc"}, path="/v1/audio/transcriptions"),
     415, "unsupported_media_type"),
    ("openai: truncated multipart", _truncated_multipart, 400, "invalid_body"),
    ("openai: bad response_format", _multipart({"response_format": "xml"}, {"file": ("a.flac", b"x")}),
     422, "invalid_parameter"),
    ("openai: temperature out of range", _multipart({"temperature": "5"}, {"file": ("a.flac", b"x")}),
     422, "invalid_parameter"),
    ("openai: unknown route", _post("/v1/audio/speech", json={}), 404, "not_found"),
]


@pytest.mark.parametrize("send, status, code", [row[1:] for row in BAD_INPUTS], ids=[row[0] for row in BAD_INPUTS])
def test_bad_input_gets_its_status_then_a_valid_request_succeeds(server, clip, send, status, code):
    response = send(server.url, clip)
    assert response.status_code == status, response.content[:300]
    body = response.json()
    error = body["error"]
    if isinstance(error, dict):  # OpenAI's shape on /v1
        assert error["code"] == code and error["message"]
        assert error["type"] == "invalid_request_error"
    else:
        assert body == {"error": error, "code": code, "status": status} and error
    transcribe_ok(server.url, clip)


def test_client_gone_mid_upload_leaves_the_server_serving(server, clip):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(_head("/", len(clip)) + clip[:1000])
        sock.shutdown(socket.SHUT_WR)
        assert sock.recv(1024) == b""  # no one left to answer: the connection just closes
    transcribe_ok(server.url, clip)


# --- health while loading, queue, metrics, shutdown ---------------------------------------------


class Gate:
    """Wraps the real handler: each call waits until the test opens the gate."""

    def __init__(self, handler):
        self.handler, self.open, self.calls = handler, threading.Event(), 0

    def __call__(self, data):
        self.calls += 1
        assert self.open.wait(60)
        return self.handler(data)


def test_health_is_503_until_the_model_is_loaded(tiny_handler, clip):
    loaded = threading.Event()

    def load():
        assert loaded.wait(60)
        return tiny_handler

    with live_server(create_app(ServerSettings(), load=load)) as server:
        for path in ("/health", "/ping"):
            response = requests.get(server.url + path, timeout=5)
            assert response.status_code == 503 and response.json()["code"] == "loading"
        early = requests.post(f"{server.url}/", data=clip, timeout=5)
        assert early.status_code == 503 and int(early.headers["Retry-After"]) > 0
        loaded.set()
        wait_until(lambda: requests.get(f"{server.url}/health", timeout=5).status_code == 200)
        transcribe_ok(server.url, clip)


def test_failed_load_keeps_health_at_503_with_the_reason():
    def load():
        raise ModelLoadError("ASR_MODEL='nope' is neither a local directory nor a Hub model")

    with live_server(create_app(ServerSettings(), load=load)) as server:
        wait_until(lambda: requests.get(f"{server.url}/health", timeout=5).json()["code"] == "model_load_failed")
        response = requests.get(f"{server.url}/health", timeout=5)
        assert response.status_code == 503 and "nope" in response.json()["error"]


def _metric(url: str, name: str) -> float:
    text = requests.get(f"{url}/metrics", timeout=5).text
    return float(next(line.split()[-1] for line in text.splitlines() if line.startswith(name + " ")))


def test_full_queue_answers_429_with_retry_after_and_queued_requests_all_succeed(tiny_handler, clip):
    gate = Gate(tiny_handler)
    settings = ServerSettings(max_concurrency=1, max_queue=2)
    with live_server(create_app(settings, handler=gate)) as server, ThreadPoolExecutor(8) as pool:
        def send():
            return requests.post(f"{server.url}/predict?return_timestamps=none", data=clip, timeout=60)

        first = pool.submit(send)
        wait_until(lambda: gate.calls == 1)
        # The event loop stays free while a decode runs on its worker thread: health answers while the
        # gate still holds that decode.
        assert requests.get(f"{server.url}/health", timeout=30).status_code == 200
        assert not first.done() and gate.calls == 1
        queued = [pool.submit(send) for _ in range(2)]
        wait_until(lambda: _metric(server.url, "whisper_queue_depth") == 2)
        refused = [send() for _ in range(3)]
        assert _metric(server.url, "whisper_inflight_requests") == 1
        for response in refused:
            assert response.status_code == 429
            assert response.json()["code"] == "queue_full"
            assert int(response.headers["Retry-After"]) >= 1
        gate.open.set()
        for future in [first, *queued]:
            response = future.result()
            assert response.status_code == 200 and response.json()["text"] == TEXT
        assert _metric(server.url, "whisper_rejected_total") == 3
        assert _metric(server.url, "whisper_inferences_total") == 3
        assert _metric(server.url, "whisper_queue_depth") == 0
        metrics = requests.get(f"{server.url}/metrics", timeout=5)
        assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert 'whisper_requests_total{route="toolkit",status="429"} 3' in metrics.text


def test_shutdown_finishes_in_flight_and_queued_requests(tiny_handler, clip):
    gate = Gate(tiny_handler)
    app = create_app(ServerSettings(max_concurrency=1), handler=gate)
    server = LiveServer(app).start()
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(requests.post, f"{server.url}/?return_timestamps=none", data=clip, timeout=60)
                   for _ in range(2)]
        wait_until(lambda: gate.calls == 1 and app.state.service.gate.waiting == 1)
        stopping = threading.Thread(target=server.stop)  # what SIGTERM does
        stopping.start()
        wait_until(lambda: not _accepts(server.port))  # no new connections...
        gate.open.set()  # ...while the running and the queued request still complete
        assert [f.result().status_code for f in futures] == [200, 200]
        stopping.join(60)
    assert not server.thread.is_alive()


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_tokens_never_reach_responses_or_logs(tiny_handler, clip, caplog):
    token = "hf_NeverShowThisToken1234567890"
    handler = copy.copy(tiny_handler)
    handler.settings = tiny_handler.settings.model_copy(update={"hf_token": SecretStr(token)})

    class Leaky:
        settings, asr = handler.settings, handler.asr

        def __call__(self, data):
            if data.get("parameters", {}).get("fail"):
                raise RuntimeError(f"backend exploded while using {token}")
            return handler(data)

    caplog.set_level(logging.INFO)
    with live_server(create_app(ServerSettings(), handler=Leaky())) as server:
        auth = {"Authorization": f"Bearer {token}"}
        paths = ("/health", "/metrics", "/v1/models")
        responses = [requests.get(f"{server.url}{path}", headers=auth, timeout=10) for path in paths]
        responses.append(requests.post(f"{server.url}/", data=b"junk", headers=auth, timeout=10))
        failed = requests.post(f"{server.url}/", json={"inputs": base64.b64encode(clip).decode(),
                                                        "parameters": {"fail": True}}, timeout=30)
        responses.append(failed)
    assert failed.status_code == 500
    assert failed.json() == {"error": "internal error", "code": "internal_error", "status": 500}
    for response in responses:
        assert token not in response.text and token not in str(response.headers)
    logged = "\n".join(record.getMessage() + (record.exc_text or "") for record in caplog.records)
    assert "backend exploded while using ***" in logged
    assert token not in logged


def test_settings_defaults():
    settings = ServerSettings()
    assert (settings.port, settings.max_concurrency, settings.max_queue) == (8080, 1, 32)
    assert (settings.max_body_bytes, settings.sagemaker_max_body_bytes) == (25 * MB, 6 * MB)
    assert ServerSettings(sagemaker_max_payload_in_mb=100).sagemaker_max_body_bytes == 100 * MB
