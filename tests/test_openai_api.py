"""The OpenAI-compatible routes through the real openai SDK, against uvicorn on loopback (tiny.en)."""

from __future__ import annotations

import json

import openai
import pytest

from support.audio import read_clip
from support.serving import CLIP, TEXT, live_server
from whisper_endpoint import formats
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

@pytest.fixture(scope="module")
def audio() -> tuple[str, bytes]:
    return ("busy.flac", read_clip(CLIP))


@pytest.fixture(scope="module")
def client(tiny_handler):
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0)


class Recorded:
    """The session's real diarizing handler, recording what each request asked for and what it answered."""

    def __init__(self, handler):
        self.handler, self.asr, self.diarizer = handler, handler.asr, handler.diarizer
        self.seen, self.results = [], []

    def __call__(self, data):
        self.seen.append(dict(data["parameters"]))
        self.results.append(self.handler(data))
        return self.results[-1]


@pytest.fixture(scope="module")
def diarized(diarizing_handler):
    handler = Recorded(diarizing_handler)
    with live_server(create_app(ServerSettings(), handler=handler)) as server:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0), handler


@pytest.fixture(scope="module")
def two_voices() -> tuple[str, bytes]:
    """The first 10 s of the flite meeting: two voices."""
    from support.paths import AUDIO
    from support.audio import decode_reference, encode

    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: 10 * 16000]
    return ("two.flac", encode(samples, 16000, "flac", "flac"))


def test_json(client, audio):
    result = client.audio.transcriptions.create(model="whisper-1", file=audio)
    assert result.text == TEXT
    assert result.usage.type == "duration" and result.usage.seconds == pytest.approx(1.801)


def test_text(client, audio):
    assert client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="text") == TEXT + "\n"


def test_srt(client, audio):
    srt = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="srt",
                                             extra_body={"subtitle_cues": "segment"})
    assert srt == f"1\n00:00:00,000 --> 00:00:01,801\n{TEXT}\n"
    # Readable cues (the default) are timed by the words: the first word's start to the last word's end.
    words = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="verbose_json",
                                               timestamp_granularities=["word"]).words
    srt = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="srt")
    clock = formats.subtitles.clock
    assert srt == f"1\n{clock(words[0].start, ',')} --> {clock(words[-1].end, ',')}\n{TEXT}\n"


def test_vtt(client, audio):
    vtt = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="vtt", language="en",
                                             extra_body={"subtitle_cues": "segment"})
    assert vtt == f"WEBVTT\n\n00:00:00.000 --> 00:00:01.801\n{TEXT}\n"


def test_verbose_json_segments(client, audio):
    result = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="verbose_json")
    assert (result.language, result.duration, result.text) == ("english", pytest.approx(1.801), TEXT)
    [segment] = result.segments
    assert (segment.id, segment.start, segment.end, segment.text.strip()) == (0, 0.0, pytest.approx(1.801), TEXT)
    # What the handler does not know is null, not made up; Whisper's confidence is there.
    assert all(getattr(segment, name) is None for name in formats.openai.UNKNOWN_SEGMENT_FIELDS)
    assert segment.avg_logprob < 0 and 0 <= segment.no_speech_prob < 0.5 and segment.temperature == 0
    assert 0 < segment.compression_ratio < 2.4
    assert result.words is None


def test_verbose_json_words_and_segments(client, audio):
    result = client.audio.transcriptions.create(
        model="whisper-1", file=audio, response_format="verbose_json", timestamp_granularities=["word", "segment"],
    )
    assert [word.word for word in result.words] == TEXT.split()
    assert all(word.start < word.end and 0.5 < word.model_extra["probability"] <= 1 for word in result.words)
    [segment] = result.segments  # both, as OpenAI returns them
    assert segment.text.strip() == TEXT and segment.avg_logprob < 0


def test_segment_granularity_is_accepted_with_any_format_as_openai_does(client, audio):
    assert client.audio.transcriptions.create(model="whisper-1", file=audio, timestamp_granularities=["segment"]).text == TEXT


def test_verbose_json_words_only(client, audio):
    result = client.audio.transcriptions.create(
        model="whisper-1", file=audio, response_format="verbose_json", timestamp_granularities=["word"],
    )
    assert [word.word for word in result.words] == TEXT.split() and result.segments is None


def test_diarized_json_needs_diarization(client, audio):
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="diarized_json")
    assert caught.value.code == "unsupported_option"
    assert "DIARIZATION_MODEL" in caught.value.message


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK marks translations deprecated
def test_translation_on_an_english_only_model_is_a_400(client, audio):
    with pytest.raises(openai.BadRequestError) as caught:
        client.audio.translations.create(model="whisper-1", file=audio)
    assert caught.value.status_code == 400 and caught.value.code == "unsupported_option"
    assert "English-only" in caught.value.message


def test_extra_body_reaches_the_handler_and_warnings_come_back(client, audio):
    response = client.audio.transcriptions.with_raw_response.create(
        model="whisper-1", file=audio, extra_body={"beam_size": 2, "shout": "yes"},
    )
    assert response.parse().text == TEXT
    assert "ignored unknown parameter 'shout'" in json.loads(response.headers["x-warnings"])


def test_languages_reach_the_handler_from_the_form(client, audio):
    # The form's extra fields go through the one request schema (issue 58): an English-only model refuses
    # Dutch, and each verbose_json segment says its language.
    with pytest.raises(openai.BadRequestError, match="nl"):
        client.audio.transcriptions.create(model="whisper-1", file=audio, extra_body={"languages": "en,nl"})
    result = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="verbose_json",
                                                extra_body={"languages": "en"})
    assert [segment.language for segment in result.segments] == ["en"]


def test_temperature_is_applied(client, audio):
    # The segment's temperature is the one faster-whisper decoded it with (0 would be greedy).
    result = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="verbose_json",
                                                temperature=0.7)
    assert [segment.temperature for segment in result.segments] == [0.7]


def test_bad_fields_are_422(client, audio):
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.audio.transcriptions.create(model="whisper-1", file=audio, timestamp_granularities=["word"])
    assert caught.value.body["param"] == "timestamp_granularities"
    with pytest.raises(openai.UnprocessableEntityError):
        client.audio.transcriptions.create(model="whisper-1", file=audio, language="klingon")


def test_models(client):
    [model] = client.models.list().data
    assert (model.id, model.object, model.owned_by) == ("embedded:tiny.en", "model", "whisper-endpoint")
    assert isinstance(model.created, int) and model.created > 0
    assert client.models.retrieve("embedded:tiny.en").id == "embedded:tiny.en"
    assert client.models.retrieve("whisper-1").id == "embedded:tiny.en"  # OpenAI's name: the default model
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("large-v3")


def test_speaker_labels_in_srt_vtt_and_diarized_json(diarized, two_voices):
    """Each format's labels are the diarizing handler's own speaker runs for that request."""
    client, handler = diarized
    segment_cues = {"subtitle_cues": "segment"}  # one cue per speaker run (readable cues: test_subtitles.py)
    srt = client.audio.transcriptions.create(model="whisper-1", file=two_voices, response_format="srt",
                                             extra_body=segment_cues)
    runs = [(run["speaker"], run["text"].strip(), run["timestamp"]) for run in handler.results[-1]["speakers"]]
    assert len({speaker for speaker, _, _ in runs}) == 2
    blocks = [block.split("\n") for block in srt.strip("\n").split("\n\n")]
    assert [block[0] for block in blocks] == [str(n) for n in range(1, len(runs) + 1)]
    assert [block[2] for block in blocks] == [f"[{speaker}] {text}" for speaker, text, _ in runs]
    assert [block[1] for block in blocks] == [f"{formats.subtitles.clock(start, ',')} --> "
                                              f"{formats.subtitles.clock(end, ',')}" for _, _, (start, end) in runs]
    vtt = client.audio.transcriptions.create(model="whisper-1", file=two_voices, response_format="vtt",
                                             extra_body=segment_cues)
    runs = [(run["speaker"], run["text"].strip()) for run in handler.results[-1]["speakers"]]
    assert [block.split("\n")[1] for block in vtt.strip("\n").split("\n\n")[1:]] == [
        f"<v {speaker}>{text}" for speaker, text in runs]
    result = client.audio.transcriptions.create(model="whisper-1", file=two_voices, response_format="diarized_json")
    response = handler.results[-1]
    assert result.text == response["text"]
    assert [(s.id, s.type, s.speaker, s.text, s.start, s.end) for s in result.segments] == [
        (f"seg_{n}", "transcript.text.segment", run["speaker"], run["text"].strip(), *run["timestamp"])
        for n, run in enumerate(response["speakers"])]
    client.audio.transcriptions.create(model="whisper-1", file=two_voices, response_format="json")
    # Formats that show speakers diarize; json does not, so the server switches it off.
    assert ["diarize" in p for p in handler.seen] == [False, False, False, True]
    assert handler.seen[-1]["diarize"] is False and handler.results[-1]["speakers"] == []


def test_subtitle_formatting():
    lines = [(3725.5, 3726.0004, "a < b & c", "A"), (0.0, 0.0, "   ", None)]
    result = {"speakers": [], "chunks": [{"text": text, "timestamp": [s, e]} for s, e, text, _ in lines]}
    assert formats.cues(result) == [(3725.5, 3726.0004, "a < b & c", None)]  # blank cues dropped
    cues = formats.subtitle_cues(result, formats.SubtitleOptions(subtitle_cues="segment"))
    assert formats.subtitles.srt(cues) == "1\n01:02:05,500 --> 01:02:06,000\na < b & c\n"
    assert formats.subtitles.vtt(cues) == "WEBVTT\n\n01:02:05.500 --> 01:02:06.000\na &lt; b &amp; c\n"


def test_openapi_documents_every_openai_form_field(client):
    import requests

    schema = requests.get(str(client.base_url).removesuffix("/v1/") + "/openapi.json", timeout=10).json()
    for path in ("/v1/audio/transcriptions", "/v1/audio/translations"):
        body = schema["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
        fields = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]["properties"]
        assert {"file", "model", "language", "prompt", "response_format", "temperature", "stream"} <= set(fields)
        assert "timestamp_granularities[]" in fields or "timestamp_granularities" in fields


def test_an_oversized_form_is_refused_while_it_arrives(client):
    """A chunked upload (no Content-Length to refuse up front) that passes MAX_BODY_BYTES (25 MB) and then
    waits: the 413 comes while the body is still incomplete, so the limit holds as the bytes arrive."""
    import socket

    host, port = str(client.base_url).removeprefix("http://").split("/")[0].split(":")
    head = (f"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n"
            "Content-Type: multipart/form-data; boundary=x\r\n\r\n").encode()
    piece = b"\0" * (1 << 20)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        for _ in range(26):  # 26 MB, and never the closing chunk
            sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        reply = sock.recv(4096).decode(errors="replace")
    assert reply.startswith("HTTP/1.1 413") and "body_too_large" in reply, reply[:300]
