"""The web page and the speaker library, in the real browser (Debian's Chromium driven by Playwright, as in
tests/test_web_page.py, whose page checks these reuse): live recording shows each utterance's speaker from
the realtime session's events, and "Remember this voice" saves a speaker of a plain (synchronous) result
from clips the page cuts from the file it sent.

The fake microphone plays two voices of fillets_cave (a big_fish turn, then a small_fish turn); big_fish is
enrolled from fillets_long (tests/test_known_speakers.py's clips), so the first utterance is named and the
second gets the session's label. The saved voice comes from the first 15 s of fillets_cave and is named
in fillets_barrel. tiny.en with the embedded diarizer, each test on its own server and
library.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import requests
from playwright.sync_api import expect

from support.audio import encode
from support.serving import live_server
from tests.test_known_speakers import AUDIO, BARREL, RATE, _b64, fish  # noqa: F401 (fixture)
from tests.test_web_page import launched_browser, web  # noqa: F401 (web: a fixture, on this module's browser)
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings
from whisper_endpoint.speakers.library.settings import LibrarySettings

CAVE = AUDIO / "dialogues" / "fillets_cave.flac"
BIG_TURN, SMALL_TURN = (22.1, 24.8), (15.4, 17.9)  # fillets_cave's turns (its .json), 2.7 s and 2.5 s
GAP_S = 1.0  # between the two voices: over server VAD's 500 ms of silence, so two utterances


def _cut(path, start: float, end: float) -> np.ndarray:
    samples = decode_file(path.read_bytes(), max_seconds=600).samples
    return samples[round(start * RATE): round(end * RATE)]


def _turns(path, until_s: float) -> list[dict]:
    return [t for t in json.loads(path.with_suffix(".json").read_text())["turns"] if t["start"] < until_s]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    voices = np.concatenate([_cut(CAVE, *BIG_TURN), np.zeros(round(GAP_S * RATE), np.float32), _cut(CAVE, *SMALL_TURN)])
    folder = tmp_path_factory.mktemp("microphone")
    (folder / "two_voices.flac").write_bytes(encode(voices, RATE, "flac", "flac"))
    # A long silence after: the fake microphone plays its file in a loop.
    yield from launched_browser(folder / "two_voices.flac", folder, after_s=6.0)


@pytest.fixture
def server(diarizing_handler, tmp_path):
    app = create_app(ServerSettings(), diarizing_handler, job_settings=JobSettings(enabled=False),
                     library_settings=LibrarySettings(db=tmp_path / "speakers.sqlite"))
    with live_server(app) as running:
        yield running


def test_live_recording_shows_the_library_name_and_the_session_label(web, server, fish):  # noqa: F811
    enrolled = requests.post(f"{server.url}/v1/speakers", timeout=60,
                             json={"name": "big_fish", "audio": [_b64(clip) for clip in fish["big_fish"]]})
    assert enrolled.status_code == 201, enrolled.text
    page = web(server).open()
    page.get_by_test_id("record").click()
    speakers = page.get_by_test_id("live-transcript").locator(".live-speaker")
    expect(speakers).to_have_count(2, timeout=40_000)  # each from a completed event's "speaker"
    # The first two utterances (a slow page may see the microphone's loop begin again).
    assert speakers.all_inner_texts()[:2] == ["big_fish", "SPEAKER_00"]


def test_remember_this_voice_on_a_plain_result_enrols_clips_cut_in_the_page(web, server, tmp_path):  # noqa: F811
    cave = tmp_path / "fillets_cave_15s.flac"
    cave.write_bytes(encode(_cut(CAVE, 0.0, 15.0), RATE, "flac", "flac"))
    page = web(server).open()
    page.get_by_test_id("audio-file").set_input_files(str(cave))
    page.get_by_test_id("submit").click()  # no jobs on this server: POST /predict
    last = page.get_by_test_id("transcript").locator("article[data-speaker]").last
    expect(last).to_be_visible(timeout=60_000)
    label = last.get_attribute("data-speaker")  # the last turn is big_fish's (10.9-14.9 s)
    page.locator(f'[data-testid="speaker-name"][data-speaker="{label}"]').fill("big_fish")
    remember = page.locator(f'[data-testid="remember-voice"][data-speaker="{label}"]')
    remember.click()
    expect(remember).to_have_text("Remembered as big_fish", timeout=30_000)
    # The server judges a save: the other voice under the same name is refused, its reason shown.
    other = page.locator(f'[data-testid="speaker-name"]:not([data-speaker="{label}"])')
    other.fill("big_fish")
    refused = page.locator('[data-testid="remember-voice"]').filter(has_not_text="Remembered")
    refused.click()
    expect(refused).to_have_text(re.compile(r"refused the request: the library already has a speaker named 'big_fish'"))

    library = requests.get(f"{server.url}/v1/speakers", timeout=10).json()["data"]
    assert [(entry["name"], 1 <= entry["clips"] <= 3) for entry in library] == [("big_fish", True)]
    # Another recording of the voice (fillets_barrel, 17-30 s: big_fish, small_fish, big_fish) names it.
    barrel = encode(_cut(BARREL, 17.0, 30.0), RATE, "flac", "flac")
    answer = requests.post(f"{server.url}/predict", data=barrel, params={"diarize": "true"},
                           headers={"Content-Type": "audio/flac"}, timeout=120)
    assert answer.status_code == 200, answer.text
    assert [found["name"] for found in answer.json()["speaker_matches"]] == ["big_fish"]
    named = [turn["timestamp"] for turn in answer.json()["speakers"] if turn["speaker"] == "big_fish"]
    truth = [((t["start"] - 17.0, t["end"] - 17.0), t["speaker"]) for t in _turns(BARREL, 30.0) if t["end"] > 17.0]
    heard = {who: sum(_overlap(span, said) for span, speaker in truth if speaker == who for said in named)
             for who in ("big_fish", "small_fish")}
    assert heard["big_fish"] > 2 * heard["small_fish"], (heard, answer.json()["speakers"])


def _overlap(a, b) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
