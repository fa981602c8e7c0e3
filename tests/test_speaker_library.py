"""The speaker library (/v1/speakers): voices enrolled once through the API name the speakers of later
requests and jobs, across a restart; a voice is enrolled from a finished job; every bad input is a 4xx.

Real voices as in test_known_speakers.py: the input is the first 30 s of fillets_barrel, the clips are
turns of the same two voice actors from fillets_long (tiny.en + the embedded diarizer). Diarization runs:
three requests and one job.
"""

from __future__ import annotations

import base64
import subprocess
import sys

import numpy as np
import pytest
import requests

from support.serving import live_server, wait_until
from tests.test_known_speakers import FISH_ASR, _b64, _named_right, excerpt, fish  # noqa: F401 (fixtures)
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings
from whisper_endpoint.speakers.library import VoiceLibrary
from whisper_endpoint.speakers.library.settings import LibrarySettings

KEY = "library-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}
REQUEST = {**FISH_ASR, "return_speaker_words": True, "return_speaker_turns": True}


# --- the store alone (no model) -------------------------------------------------------------------------

def _vector(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=8)


def test_entries_survive_reopening_and_another_embedding_model_is_refused(tmp_path):
    path = tmp_path / "speakers.sqlite"
    library = VoiceLibrary(path, "model-A", max_speakers=2, seeds={"Seed": _vector(0)})
    ann = library.add("Ann", [_vector(1)])
    library.add_clips(ann.id, [_vector(2)])
    with pytest.raises(Exception, match="library is full"):
        library.add("Bob", [_vector(3)])  # the seed counts
    library.close()
    again = VoiceLibrary(path, "model-A", max_speakers=5)
    assert [(s.name, len(s.embeddings)) for s in again.speakers()] == [("Ann", 2)]
    assert set(again.voiceprints()) == {"Ann"}
    again.close()
    with pytest.raises(ModelLoadError, match="embedded with 'model-A'.*embeds with 'model-B'"):
        VoiceLibrary(path, "model-B", max_speakers=5)


CRASH = """
import os, sys, numpy as np
from whisper_endpoint.speakers.library import store
library = store.VoiceLibrary(sys.argv[1], "m", max_speakers=10)
kept = library.add("Kept", [np.ones(4)])
store._Transaction.__exit__ = lambda *exc: os._exit(9)  # killed after the write, before its commit
library.add_clips(kept.id, [np.ones(4)])
"""


def test_a_crash_mid_write_loses_no_entry(tmp_path):
    path = tmp_path / "speakers.sqlite"
    done = subprocess.run([sys.executable, "-c", CRASH, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 9, done.stderr
    library = VoiceLibrary(path, "m", max_speakers=10)
    assert [(s.name, len(s.embeddings)) for s in library.speakers()] == [("Kept", 1)]


# --- over HTTP, with real voices --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("library")
    return (JobSettings(db=folder / "jobs.sqlite", poll_s=0.1),
            LibrarySettings(db=folder / "speakers.sqlite", max=4))


def _server(handler, stores, **settings):
    jobs, library = stores
    return live_server(create_app(ServerSettings(api_keys=KEY, **settings), handler=handler, job_settings=jobs,
                                  library_settings=library))


def _transcribe(url: str, audio: bytes, **parameters) -> dict:
    response = requests.post(f"{url}/predict", headers=AUTH, timeout=120,
                             json={"inputs": base64.b64encode(audio).decode(), "parameters": {**REQUEST, **parameters}})
    assert response.status_code == 200, response.text
    return response.json()


def test_enrolled_voices_are_named_in_requests_and_jobs_across_a_restart(diarizing_handler, stores, excerpt, fish):
    audio, turns = excerpt
    with _server(diarizing_handler, stores) as server:
        url = f"{server.url}/v1/speakers"
        assert requests.get(url, timeout=5).status_code == 401
        made = {}
        for name in ("big_fish", "small_fish"):
            response = requests.post(url, headers=AUTH, json={"name": name, "audio": [_b64(c) for c in fish[name]]})
            assert response.status_code == 201, response.text
            made[name] = response.json()
            assert made[name]["clips"] == 2 and "CAM++" in made[name]["embedding_model"]
        listed = requests.get(url, headers=AUTH, timeout=5).json()["data"]
        assert [s["name"] for s in listed] == ["big_fish", "small_fish"]

        named = _transcribe(server.url, audio)
        right = _named_right(named["speaker_turns"], turns)
        assert right["big_fish"] >= 0.9 and right["small_fish"] >= 0.9, right
        assert {m["name"] for m in named["speaker_matches"]} == {"big_fish", "small_fish"}
        job = requests.post(f"{server.url}/jobs", headers={**AUTH, "Content-Type": "audio/flac"}, data=audio,
                            params={**FISH_ASR, "speaker_library": "false"}).json()
        state = {}
        wait_until(lambda: state.update(requests.get(f"{server.url}/jobs/{job['id']}", headers=AUTH).json())
                   or state["status"] in ("succeeded", "failed"), timeout=120, interval=0.1)
        assert state["status"] == "succeeded", state
        assert "speaker_matches" not in state["result"]  # speaker_library: false
        assert {s["speaker"] for s in state["result"]["speakers"]} <= {"SPEAKER_00", "SPEAKER_01", "SPEAKER_02"}
        label = state["result"]["speakers"][0]["speaker"]
        enrol = {"name": "from_job", "job_id": job["id"], "speaker": label}
        response = requests.post(url, headers=AUTH, json=enrol)
        assert response.status_code == 201, response.text
        from_job = response.json()
        for wrong, status in [({**enrol, "name": "x", "job_id": "nope"}, 404),
                              ({**enrol, "name": "x", "speaker": "SPEAKER_09"}, 404),
                              ({**enrol, "name": "big_fish"}, 409)]:
            response = requests.post(url, headers=AUTH, json=wrong)
            assert response.status_code == status, response.text
            assert (wrong["job_id"] if status == 404 and wrong["job_id"] == "nope" else
                    "its speakers: SPEAKER_0" if status == 404 else "already has") in _error(response)
        assert requests.delete(f"{url}/{from_job['id']}", headers=AUTH).status_code == 204

    with _server(diarizing_handler, stores) as server:  # a restart: the library is read from its file
        again = _transcribe(server.url, audio)
        after = _named_right(again["speaker_turns"], turns)
        assert after["big_fish"] >= 0.9 and after["small_fish"] >= 0.9, after
        assert {m["name"] for m in again["speaker_matches"]} == {"big_fish", "small_fish"}
        listed = requests.get(f"{server.url}/v1/speakers", headers=AUTH).json()["data"]
        assert [s["name"] for s in listed] == ["big_fish", "small_fish"]


def test_a_request_name_wins_over_the_library_and_speaker_library_false_drops_it(tmp_path):
    from whisper_endpoint.speakers import step as speaker_step
    from whisper_endpoint.core.config import InferenceConfig

    library = VoiceLibrary(tmp_path / "s.sqlite", "m", max_speakers=4, seeds={"Dir": _vector(0)})
    library.add("Ann", [_vector(1)])
    library.add("Bob", [_vector(2)])
    clip = {"name": "Ann", "audio": _clip(2.5)}

    class Diarizer:  # the request's clip embedded as _vector(3)
        def embed_voice(self, samples):
            return _vector(3)

    def voices(**parameters):
        return speaker_step.request_voices(Diarizer(), InferenceConfig(**parameters), {"Old": _vector(4)}, library)

    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    assert set(voices()) == {"Dir", "Ann", "Bob"}  # the library, SPEAKERS_DIR's seed among them
    assert np.allclose(voices(known_speakers=[clip])["Ann"], unit(_vector(3)))
    assert set(voices(known_speakers=[clip])) == {"Dir", "Ann", "Bob"}
    assert set(voices(speaker_library=False, known_speakers=[clip])) == {"Ann"}
    assert voices(speaker_library=False) == {}


def _error(response) -> str:
    """The message of an error body: the toolkit's {"error": "..."} or OpenAI's {"error": {"message": ...}}."""
    error = response.json()["error"]
    return error["message"] if isinstance(error, dict) else error


def _clip(seconds: float) -> str:
    return _b64((np.sin(np.arange(round(seconds * 16000)) * 0.05) * 0.3).astype(np.float32))


def test_bad_library_requests_are_4xx_naming_the_problem(diarizing_handler, tmp_path):
    jobs = JobSettings(enabled=False, db=tmp_path / "jobs.sqlite")
    with _server(diarizing_handler, (jobs, LibrarySettings(db=tmp_path / "s.sqlite", max=2)),
                 max_body_bytes=1024 * 1024) as server:
        url = f"{server.url}/v1/speakers"
        ann = requests.post(url, headers=AUTH, json={"name": "Ann", "audio": _clip(2.5)})
        assert ann.status_code == 201, ann.text
        speaker = ann.json()["id"]
        cases = [
            ("post", url, {"name": "Ann", "audio": _clip(2.5)}, 409, "already has a speaker named 'Ann'"),
            ("post", url, {"name": "Bob", "audio": _clip(1.0)}, 422, "audio[0]: the clip lasts 1.0 s"),
            ("post", url, {"name": "Bob", "audio": [_clip(2.5)] * 4}, 422, "at most 3 items"),
            ("post", url, {"name": "SPEAKER_01", "audio": _clip(2.5)}, 422, "label of an unnamed speaker"),
            ("post", url, {"name": "Bob"}, 422, "audio: Field required"),
            ("post", url, {"name": "Bob", "job_id": "j", "speaker": "SPEAKER_00"}, 404, "no job 'j'"),
            ("post", url, [1, 2], 400, "must be a JSON object"),
            ("get", f"{url}/nope", None, 404, "no speaker 'nope'"),
            ("patch", f"{url}/nope", {"name": "Bob"}, 404, "no speaker 'nope'"),
            ("delete", f"{url}/nope", None, 404, "no speaker 'nope'"),
            ("post", f"{url}/nope/audio", {"audio": _clip(2.5)}, 404, "no speaker 'nope'"),
            ("patch", f"{url}/{speaker}", {"name": "a\nb"}, 422, "line breaks"),
            ("post", f"{url}/{speaker}/audio", {"audio": "%%%"}, 400, "audio[0]: not base64"),
        ]
        for method, where, body, status, fragment in cases:
            response = requests.request(method, where, headers=AUTH, json=body, timeout=30)
            assert response.status_code == status and fragment in _error(response), (body, response.text)
        big = requests.post(url, headers={**AUTH, "Content-Type": "application/json"},
                            data=b'{"name": "Bob", "audio": "' + b"A" * (2 * 1024 * 1024) + b'"}')
        assert big.status_code == 413 and "MAX_BODY_BYTES" in _error(big)
        assert requests.patch(f"{url}/{speaker}", headers=AUTH, json={"name": "Anna"}).json()["name"] == "Anna"
        assert requests.post(f"{url}/{speaker}/audio", headers=AUTH, json={"audio": _clip(3)}).json()["clips"] == 2
        assert requests.post(url, headers=AUTH, json={"name": "Bob", "audio": _clip(2.5)}).status_code == 201
        full = requests.post(url, headers=AUTH, json={"name": "Cy", "audio": _clip(2.5)})
        assert full.status_code == 409 and "SPEAKERS_MAX" in _error(full)
        assert requests.delete(f"{url}/{speaker}", headers=AUTH).status_code == 204
        assert requests.get(f"{url}/{speaker}", headers=AUTH).status_code == 404
