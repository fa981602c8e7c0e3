"""G.711 telephone audio (issue 71): live sessions in mu-law and A-law (OpenAI's ``g711_ulaw`` /
``g711_alaw``, ``audio/pcmu`` / ``audio/pcma``), WAV-wrapped G.711 files, and headerless G.711 bodies
declared by their type or file name. The clip is real telephone-band speech, encoded to G.711 here by
FFmpeg (PyAV), the library the server decodes it with; a session in G.711 must hear the words the same
audio brings in PCM16, on tiny.en against uvicorn on loopback.
"""

from __future__ import annotations

import base64
import struct

import numpy as np
import pytest
import requests

from support.audio import encode, pcm16
from support.serving import live_server, wait_until
from tests.realtime_client import AUDIO, Session
from whisper_endpoint.adapters.http import payload
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

CLIP = AUDIO / "clips" / "asterisk_conf-now-unmuted.flac"  # 2.1 s
COMPLETED = "conversation.item.input_audio_transcription.completed"
# law -> FFmpeg's raw muxer and codec, and the WAV format tag (RFC 2361)
LAWS = {"mulaw": ("mulaw", "pcm_mulaw", 7), "alaw": ("alaw", "pcm_alaw", 6)}


@pytest.fixture(scope="module")
def server(tiny_handler, tmp_path_factory):
    jobs = JobSettings(db=tmp_path_factory.mktemp("jobs") / "jobs.sqlite", poll_s=0.1)
    with live_server(create_app(ServerSettings(), handler=tiny_handler, job_settings=jobs)) as server:
        yield server


@pytest.fixture(scope="module")
def telephone() -> np.ndarray:
    """The clip at G.711's 8 kHz, float samples."""
    return pcm16(CLIP, 8000).astype(np.float32) / 32768


def g711(samples: np.ndarray, law: str) -> bytes:
    muxer, codec, _ = LAWS[law]
    return encode(samples, 8000, muxer, codec)


def heard(server, update: dict, audio: bytes, piece: int) -> tuple[dict, str]:
    """One session: ``update``, ``audio`` in appends of ``piece`` bytes (100 ms), a commit; what the
    session said its settings are, and the utterance's transcript."""
    url = server.url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    with Session(url) as session:
        session.wait_for("session.created")
        session.send(update)
        for start in range(0, len(audio), piece):
            session.send({"type": "input_audio_buffer.append",
                          "audio": base64.b64encode(audio[start:start + piece]).decode()})
        session.send({"type": "input_audio_buffer.commit"})
        completed = session.wait_for(COMPLETED, timeout=60)[0]
        updated = next(event for event in session.events if event["type"].endswith("session.updated"))
    return updated["session"], completed["transcript"]


def test_a_live_session_in_mu_law_or_a_law_hears_what_pcm16_brings(server, telephone):
    manual = {"turn_detection": None}
    pcm24 = pcm16(CLIP, 24000)  # OpenAI's pcm16: 24 kHz
    _, reference = heard(server, {"type": "session.update", "session": {"type": "transcription", "audio": {
        "input": {**manual, "transcription": {"language": "en"}}}}}, pcm24.tobytes(), 4800)
    beta, ulaw = heard(server, {"type": "transcription_session.update", "session": {
        **manual, "input_audio_format": "g711_ulaw", "input_audio_transcription": {"language": "en"}}},
        g711(telephone, "mulaw"), 800)
    ga, alaw = heard(server, {"type": "session.update", "session": {"type": "transcription", "audio": {"input": {
        **manual, "format": {"type": "audio/pcma"}, "transcription": {"language": "en"}}}}},
        g711(telephone, "alaw"), 800)
    assert reference.strip() and ulaw == reference and alaw == reference, (reference, ulaw, alaw)
    assert beta["input_audio_format"] == "g711_ulaw"  # the session says the format it took
    assert ga["audio"]["input"]["format"] == {"type": "audio/pcma"}


@pytest.mark.parametrize("law", ["mulaw", "alaw"])
def test_wav_wrapped_and_declared_raw_g711_decode_alike(telephone, law):
    """A WAV file of G.711 (format tag 7 or 6) decodes through FFmpeg; the same bytes without a header,
    declared by their Content-Type, decode to the same samples."""
    _, codec, tag = LAWS[law]
    wav = encode(telephone, 8000, "wav", codec)
    assert struct.unpack_from("<H", wav, 20)[0] == tag
    from_wav = decode_file(wav, max_seconds=60).samples
    kind = {"mulaw": "audio/pcmu", "alaw": "audio/pcma"}[law]
    raw = payload(g711(telephone, law), f"{kind}; rate=8000", {})["inputs"]
    from_raw = decode_file(raw, max_seconds=60).samples
    assert len(from_wav) == len(from_raw) == pytest.approx(len(telephone) * 2, abs=2)
    assert np.array_equal(from_wav, from_raw)
    # G.711 keeps speech within a few per cent of its 16-bit form
    original = decode_file(encode(telephone, 8000, "wav", "pcm_s16le"), max_seconds=60).samples
    assert np.abs(from_raw - original).max() < 0.03


def test_a_file_sent_as_its_g711_type_is_read_as_the_file_it_is(telephone):
    """``mimetypes`` calls ``.au`` audio/basic: a body with the .au header is that file, not raw mu-law."""
    au = encode(telephone, 8000, "au", "pcm_mulaw")
    assert au.startswith(b".snd")
    declared = payload(au, "audio/basic", {})["inputs"]
    raw = payload(g711(telephone, "mulaw"), "audio/basic", {})["inputs"]
    assert np.array_equal(decode_file(declared, max_seconds=60).samples, decode_file(raw, max_seconds=60).samples)
    # a G.711 WAV file sent with the type of its samples is read as the file too
    wav = payload(encode(telephone, 8000, "wav", "pcm_alaw"), "audio/pcma", {})["inputs"]
    assert np.array_equal(decode_file(wav, max_seconds=60).samples,
                          decode_file(payload(g711(telephone, "alaw"), "audio/pcma", {})["inputs"], max_seconds=60).samples)


def test_raw_g711_uploads_transcribe_as_the_clip_does(server, telephone, tiny_handler):
    expected = tiny_handler({"inputs": CLIP.read_bytes(), "parameters": {"language": "en"}})["text"]
    toolkit = requests.post(server.url + "/predict?language=en", data=g711(telephone, "mulaw"),
                            headers={"Content-Type": "audio/basic"}, timeout=60)
    openai = requests.post(server.url + "/v1/audio/transcriptions", data={"language": "en"}, timeout=60,
                           files={"file": ("call.al", g711(telephone, "alaw"), "application/octet-stream")})
    # A job keeps the declaration, its rate too, until its worker decodes the bytes (here A-law at 16 kHz).
    wide = encode(pcm16(CLIP, 16000).astype(np.float32) / 32768, 16000, "alaw", "pcm_alaw")
    job = requests.post(server.url + "/jobs?language=en", data=wide, timeout=10,
                        headers={"Content-Type": "audio/pcma; rate=16000"})
    assert toolkit.status_code == 200 and openai.status_code == 200 and job.status_code == 202, (toolkit.text,
                                                                                               openai.text, job.text)
    state = {}
    wait_until(lambda: state.update(requests.get(server.url + job.json()["url"], timeout=5).json())
               or state["status"] in ("succeeded", "failed"), timeout=60, interval=0.1)
    assert toolkit.json()["text"] == openai.json()["text"] == state["result"]["text"] == expected, state
    assert state["result"]["duration"] == pytest.approx(len(wide) / 16000, abs=0.01)


@pytest.mark.parametrize("content_type, words", [
    ("audio/pcmu; rate=eight", "rate='eight'"),
    ("audio/pcma; rate=96000", "4000..48000"),
    ("audio/pcmu; channels=2", "mono only"),
    ("audio/basic; rate=16000", "takes no parameters"),
    ("audio/pcma; law=a", "unknown parameter 'law'"),
])
def test_a_wrong_g711_declaration_is_a_415_that_names_it(server, content_type, words):
    answer = requests.post(server.url + "/predict", data=b"\xff" * 800, headers={"Content-Type": content_type},
                           timeout=10)
    assert answer.status_code == 415 and words in answer.json()["error"], answer.text
    job = requests.post(server.url + "/jobs", data=b"\xff" * 800, headers={"Content-Type": content_type}, timeout=10)
    assert job.status_code == 415 and words in job.json()["error"], job.text
    form = requests.post(server.url + "/v1/audio/transcriptions", timeout=10,
                         files={"file": ("call", b"\xff" * 800, content_type)})
    assert form.status_code == 415 and form.json()["error"]["param"] == "file", form.text
