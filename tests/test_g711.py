"""G.711 telephone audio (issue 71): live sessions in mu-law and A-law (OpenAI's ``g711_ulaw`` /
``g711_alaw``, ``audio/pcmu`` / ``audio/pcma``). The clip is real telephone-band speech, encoded to
G.711 here by FFmpeg (PyAV), the library the server decodes it with; a session in G.711 must hear the
words the same audio brings in PCM16, on tiny.en against uvicorn on loopback.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from support.audio import encode, pcm16
from support.serving import live_server
from tests.realtime_client import AUDIO, Session
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

CLIP = AUDIO / "clips" / "asterisk_conf-now-unmuted.flac"  # 2.1 s
COMPLETED = "conversation.item.input_audio_transcription.completed"
# law -> FFmpeg's raw muxer and codec
LAWS = {"mulaw": ("mulaw", "pcm_mulaw"), "alaw": ("alaw", "pcm_alaw")}


@pytest.fixture(scope="module")
def server(tiny_handler):
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        yield server


@pytest.fixture(scope="module")
def telephone() -> np.ndarray:
    """The clip at G.711's 8 kHz, float samples."""
    return pcm16(CLIP, 8000).astype(np.float32) / 32768


def g711(samples: np.ndarray, law: str) -> bytes:
    muxer, codec = LAWS[law]
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
