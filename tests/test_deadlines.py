"""Deadlines and cancellation of live requests (issue 18), against uvicorn on loopback with tiny.en.

A decode stops at its next window when its client disconnects or its deadline passes. The tests
decide by order, through the decode context's hook (serving_helpers.HeldHandler): the first request
is held after its first window until the server stops it, so nothing depends on how fast this
machine decodes. The long input is flite_meeting (36 s) in 10 s windows, one per batch: 5 windows.
"""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
import requests

from support.paths import AUDIO
from support.serving import TEXT, HeldHandler, live_server, wait_until
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

pytestmark = pytest.mark.usefixtures("short_windows")  # several windows from short audio (conftest)

LONG = {"chunk_length_s": 10, "batch_size": 1, "return_timestamps": "none"}
WINDOWS = 5


@pytest.fixture(scope="module")
def long_audio() -> bytes:
    return (AUDIO / "dialogues" / "flite_meeting.flac").read_bytes()


def _raw_post(url: str, path: str, body: bytes) -> socket.socket:
    """Send a whole POST and leave the connection open, unread (closing it is the disconnect)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)))
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: audio/flac\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    sock.sendall(head.encode() + body)
    return sock


def test_a_disconnected_client_frees_its_slot_at_the_next_window(tiny_handler, clip, long_audio):
    held = HeldHandler(tiny_handler)
    app = create_app(ServerSettings(max_concurrency=1), handler=held)
    gate = app.state.service.gate
    with live_server(app) as server, ThreadPoolExecutor(1) as pool:
        abandoned = _raw_post(server.url, "/predict?" + "&".join(f"{k}={v}" for k, v in LONG.items()), long_audio)
        assert held.held.wait(60)  # decoding, after its first window
        queued = pool.submit(requests.post, f"{server.url}/predict", data=clip, timeout=60)
        wait_until(lambda: gate.waiting == 1)  # behind the long request, MAX_CONCURRENCY=1
        abandoned.close()
        response = queued.result()
        assert response.status_code == 200 and response.json()["text"] == TEXT
    assert held.contexts[0].stop_reason == "disconnected"
    # The abandoned decode stopped where it was: 1 of its 5 windows, none after the disconnect.
    assert held.windows_done(0) == 1 and max(total for n, _, total in held.reports if n == 0) == WINDOWS
    assert held.reports[-1][0] == 1  # the queued request decoded after it, to its end


def test_past_its_deadline_a_request_is_a_json_504_and_so_is_one_still_queued(tiny_handler, long_audio):
    # The first request (deadline 4 s) is held at its first report (its windows packed, none decoded)
    # while the second (deadline 1 s) waits behind it, then released once its own deadline has passed.
    held = HeldHandler(tiny_handler, hold_at=0, until_stopped=False)
    settings = ServerSettings(max_concurrency=1, request_timeout_s=4.0, sagemaker_request_timeout_s=1.0)
    app = create_app(settings, handler=held)
    with live_server(app) as server, ThreadPoolExecutor(1) as pool:
        first = pool.submit(requests.post, f"{server.url}/predict", params=LONG, data=long_audio, timeout=60)
        assert held.held.wait(60)
        second = requests.post(f"{server.url}/invocations", params=LONG, data=long_audio, timeout=60)
        wait_until(lambda: held.contexts[0].stop_reason == "deadline")
        held.release.set()  # the first goes on, past its deadline: it stops at once
        first = first.result()
    # The second waited for the slot past its deadline: answered without decoding at all.
    assert (second.status_code, second.json()["code"]) == (504, "deadline_exceeded")
    assert "deadline of 1 s (setting SAGEMAKER_REQUEST_TIMEOUT_S)" in second.json()["error"]
    assert len(held.contexts) == 1
    # The first stopped where it was held, its deadline passed meanwhile.
    assert (first.status_code, first.json()["code"]) == (504, "deadline_exceeded")
    assert "deadline of 4 s (setting REQUEST_TIMEOUT_S)" in first.json()["error"]
    assert f"after 0 of {WINDOWS} windows" in first.json()["error"] and held.windows_done(0) == 0


def test_the_openai_route_answers_504_in_openai_shape(tiny_handler, long_audio):
    held = HeldHandler(tiny_handler, hold_at=0)  # held until its deadline
    app = create_app(ServerSettings(request_timeout_s=2.0), handler=held)
    with live_server(app) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught:
            client.audio.transcriptions.create(model="whisper-1", file=("long.flac", long_audio),
                                               extra_body={"chunk_length_s": 10, "batch_size": 1})
    assert caught.value.status_code == 504 and caught.value.body["code"] == "deadline_exceeded"
    assert held.windows_done(0) == 0


def test_deadlines_by_default_only_on_invocations(monkeypatch):
    for name in ("REQUEST_TIMEOUT_S", "SAGEMAKER_REQUEST_TIMEOUT_S"):
        monkeypatch.delenv(name, raising=False)
    settings = ServerSettings()
    assert (settings.request_timeout_s, settings.sagemaker_request_timeout_s) == (0, 60)
    monkeypatch.setenv("REQUEST_TIMEOUT_S", "120")
    assert ServerSettings().request_timeout_s == 120
