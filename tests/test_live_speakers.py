"""Live speaker labels: a realtime session with ``speaker_labels: true`` gets ``speaker`` on each completed
event: the library's name for an enrolled voice, a session-stable SPEAKER_NN for another. The openai SDK's
realtime client against uvicorn on loopback (tiny.en + the embedded diarizer); big_fish enrolled through
/v1/speakers from fillets_long, the first six turns of fillets_cave committed one by one.
"""

from __future__ import annotations

import asyncio
import base64
import json

import numpy as np
import requests

from support.serving import live_server
from tests.test_known_speakers import AUDIO, RATE, _b64, fish  # noqa: F401 (fixture)
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings
from whisper_endpoint.speakers.library.settings import LibrarySettings

CAVE = AUDIO / "dialogues" / "fillets_cave.flac"
COMPLETED = "conversation.item.input_audio_transcription.completed"
TURNS = 6


def test_live_utterances_carry_the_library_name_or_a_stable_label(diarizing_handler, fish, tmp_path):
    samples = decode_file(CAVE.read_bytes(), max_seconds=600).samples
    turns = json.loads(CAVE.with_suffix(".json").read_text())["turns"][:TURNS]
    app = create_app(ServerSettings(), handler=diarizing_handler, job_settings=JobSettings(enabled=False),
                     library_settings=LibrarySettings(db=tmp_path / "speakers.sqlite"))
    with live_server(app) as server:
        enrolled = requests.post(f"{server.url}/v1/speakers", json={
            "name": "big_fish", "audio": [_b64(c) for c in fish["big_fish"]]})
        assert enrolled.status_code == 201, enrolled.text
        speakers = asyncio.run(asyncio.wait_for(_session(server.url, samples, turns), 240))
    truth = [turn["speaker"] for turn in turns]
    assert {"big_fish", "small_fish"} == set(truth)
    named = [said for said, who in zip(speakers, truth) if who == "big_fish"]
    others = {said for said, who in zip(speakers, truth) if who != "big_fish"}
    assert named.count("big_fish") >= len(named) - 1, (speakers, truth)
    assert len(others) == 1 and next(iter(others)).startswith("SPEAKER_"), (speakers, truth)


async def _session(url: str, samples: np.ndarray, turns: list[dict], key: str = "not-checked") -> list[str]:
    """The speaker of each turn, committed one by one in a live session opened with ``key``."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url + "/v1", api_key=key)
    speakers = []
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
        await connection.session.update(session={"type": "transcription", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None,
            "transcription": {"language": "en", "speaker_labels": True}}}})
        for turn in turns:
            pcm = (samples[round(turn["start"] * RATE): round(turn["end"] * RATE)] * 32767).astype("<i2")
            await connection.input_audio_buffer.append(audio=base64.b64encode(pcm.tobytes()).decode())
            await connection.input_audio_buffer.commit()
            async for event in connection:
                assert event.type != "error", event
                if event.type == COMPLETED:
                    speakers.append((event.model_extra or {}).get("speaker"))
                    break
    return speakers


def test_a_session_holds_a_bounded_number_of_voices():
    """A client streaming a new 'voice' every utterance (noise) cannot grow the session's state without end."""
    import numpy as np

    from whisper_endpoint.serving.realtime.speakers import MAX_SESSION_VOICES, LiveSpeakers

    rng = np.random.default_rng(0)  # unrelated vectors: every utterance is far from every voice
    live = LiveSpeakers(lambda samples: rng.standard_normal(192), lambda: {})
    labels = [live.label(np.zeros(32000, np.float32)) for _ in range(3 * MAX_SESSION_VOICES)]
    assert len(live.voices) == MAX_SESSION_VOICES
    assert set(labels) == set(live.voices)
