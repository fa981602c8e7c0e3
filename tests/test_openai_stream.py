"""OpenAI ``stream=true`` (issue 20): server-sent transcript events, against uvicorn on loopback.

Real streaming is shown by order, not time: the decode is held after its first window (of 5: the
36 s flite_meeting in 10 s windows, one per batch) by its decode context's hook
(serving_helpers.HeldHandler), and the first delta must arrive while it is held.
"""

from __future__ import annotations

import json
import socket
import time

import openai
import pytest
import requests

from support.paths import AUDIO
from support.audio import encode
from support.serving import HeldHandler, live_server, wait_until
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

pytestmark = pytest.mark.usefixtures("short_windows")  # several windows from short audio (conftest)

LONG = {"chunk_length_s": "10", "batch_size": "1"}


@pytest.fixture(scope="module")
def long_audio() -> bytes:
    return (AUDIO / "dialogues" / "flite_meeting.flac").read_bytes()


def _post(url: str, audio: bytes, **fields) -> requests.Response:
    return requests.post(f"{url}/v1/audio/transcriptions", files={"file": ("long.flac", audio)},
                         data={"model": "whisper-1", **{**LONG, **fields}}, stream=True, timeout=60)


def _events(response: requests.Response):
    """The raw events, as a plain client reads them: ``data: {json}`` lines."""
    for line in response.iter_lines():
        if line:
            assert line.startswith(b"data: "), line
            yield json.loads(line.removeprefix(b"data: "))


def test_the_first_delta_comes_before_the_last_window_is_decoded(tiny_handler, long_audio):
    held = HeldHandler(tiny_handler, until_stopped=False)
    with live_server(create_app(ServerSettings(), handler=held)) as server:
        with _post(server.url, long_audio, stream="true") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = _events(response)
            first = next(events)
            # Held after its first window of 5: the delta came from what was decoded so far.
            assert first["type"] == "transcript.text.delta" and first["delta"]
            assert held.windows_done(0) == 1 and held.reports[-1][1:] == (1, 5)
            held.release.set()
            rest = list(events)
        whole = requests.post(f"{server.url}/v1/audio/transcriptions", files={"file": ("long.flac", long_audio)},
                              data={"model": "whisper-1", **LONG}, timeout=60).json()["text"]
    deltas = [first] + [event for event in rest if event["type"] == "transcript.text.delta"]
    done = rest[-1]
    assert len(deltas) >= 2 and [event["type"] for event in rest[len(deltas) - 1:]] == ["transcript.text.done"]
    assert "".join(event["delta"] for event in deltas) == done["text"] == whole
    assert done["usage"] == {"type": "duration", "seconds": pytest.approx(36, abs=1)} and done["warnings"] == []


def test_the_openai_sdk_reads_the_stream(tiny_handler, long_audio):
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0)
        events = list(client.audio.transcriptions.create(model="whisper-1", file=("long.flac", long_audio),
                                                         stream=True, extra_body=LONG))
    assert [event.type for event in events[-1:]] == ["transcript.text.done"]
    deltas = [event.delta for event in events if event.type == "transcript.text.delta"]
    assert len(deltas) == len(events) - 1 >= 2 and "".join(deltas) == events[-1].text
    assert "quarterly numbers" in events[-1].text.lower()


def test_errors_before_the_first_event_are_http_errors_and_after_it_an_error_event(tiny_handler, long_audio):
    held = HeldHandler(tiny_handler)  # held after its first window until its deadline
    with live_server(create_app(ServerSettings(request_timeout_s=60), handler=held)) as server:
        with _post(server.url, long_audio, stream="true") as response:
            assert response.status_code == 200
            reader = _events(response)
            events = [next(reader)]
            # The deadline passes now, while the decode is held: no race with a slow first window.
            held.contexts[0].deadline = time.monotonic()
            events += list(reader)
        refused = _post(server.url, b"not audio at all", stream="true")
        assert (refused.status_code, refused.json()["error"]["code"]) == (415, "undecodable_audio")
    assert [event["type"] for event in events] == ["transcript.text.delta", "error"]
    assert events[1]["error"]["code"] == "deadline_exceeded" and "after 1 of 5 windows" in events[1]["error"]["message"]
    assert held.windows_done(0) == 1


def test_a_client_that_disconnects_mid_stream_stops_the_decode(tiny_handler, long_audio):
    held = HeldHandler(tiny_handler)  # held after its first window until the disconnect stops it
    with live_server(create_app(ServerSettings(), handler=held)) as server:
        request = requests.Request("POST", f"{server.url}/v1/audio/transcriptions", files={"file": ("l.flac", long_audio)},
                                   data={"model": "whisper-1", "stream": "true", **LONG}).prepare()
        head = "".join(f"{name}: {value}\r\n" for name, value in request.headers.items())
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode() + request.body)
            sock.settimeout(60)
            received = b""
            while b"transcript.text.delta" not in received:  # the first delta, then the client goes away
                piece = sock.recv(65536)
                assert piece, received  # the server closed before any delta
                received += piece
        wait_until(lambda: held.contexts[0].stop_reason == "disconnected")
    assert held.windows_done(0) == 1 and b" 200 OK" in received.split(b"\r\n")[0]


def test_formats_that_are_not_streamed_are_refused(tiny_handler, clip):
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        response = requests.post(f"{server.url}/v1/audio/transcriptions", files={"file": ("a.flac", clip)},
                                 data={"model": "whisper-1", "stream": "true", "response_format": "srt"}, timeout=60)
    assert (response.status_code, response.json()["error"]["param"]) == (400, "stream")


def test_diarized_json_streams_speaker_segments_after_diarization(diarizing_handler, long_audio):
    # The meeting's first 10 s (two voices) in 4 s windows: 3 windows, diarization kept cheap.
    samples = decode_file(long_audio, max_seconds=600).samples[: 10 * 16000]
    audio = encode(samples, 16000, "flac", "flac")
    with live_server(create_app(ServerSettings(), handler=diarizing_handler)) as server:
        with _post(server.url, audio, stream="true", response_format="diarized_json", chunk_length_s="4") as response:
            events = list(_events(response))
    kinds = [event["type"] for event in events]
    segments = [event for event in events if event["type"] == "transcript.text.segment"]
    # Deltas while decoding, then the speakers' segments once diarization has run, then done.
    assert kinds == sorted(kinds, key=["transcript.text.delta", "transcript.text.segment",
                                       "transcript.text.done"].index) and kinds[-1] == "transcript.text.done"
    assert kinds.count("transcript.text.delta") >= 2 and len({s["speaker"] for s in segments}) >= 2
    assert all({"speaker", "start", "end", "text"} <= set(s) and s["start"] <= s["end"] for s in segments)
    assert "".join(e["delta"] for e in events if e["type"] == "transcript.text.delta") == events[-1]["text"]
