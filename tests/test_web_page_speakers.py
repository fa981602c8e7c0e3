"""The web page and the speaker library, in the real browser (Debian's Chromium driven by Playwright, as in
tests/test_web_page.py, whose page checks these reuse): live recording shows each utterance's speaker from
the realtime session's events.

The fake microphone plays two voices of fillets_cave (a big_fish turn, then a small_fish turn); big_fish is
enrolled from fillets_long (tests/test_known_speakers.py's clips), so the first utterance is named and the
second gets the session's label. tiny.en with the embedded diarizer, each test on its own server and
library.
"""

from __future__ import annotations

import numpy as np
import pytest
import requests
from playwright.sync_api import expect, sync_playwright

from scripts.browser import chromium, launch, microphone_wav
from tests.conftest import encode
from tests.serving_helpers import live_server
from tests.test_known_speakers import AUDIO, RATE, _b64, fish  # noqa: F401 (fixture)
from tests.test_web_page import web  # noqa: F401 (fixture, on this module's browser)
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings
from whisper_endpoint.voice_library.settings import LibrarySettings

CAVE = AUDIO / "dialogues" / "fillets_cave.flac"
BIG_TURN, SMALL_TURN = (7.5, 10.6), (25.6, 28.4)  # fillets_cave's turns (its .json), 3.1 s and 2.8 s
GAP_S = 1.2  # between the two voices: over server VAD's 500 ms of silence, so two utterances


def _cut(path, start: float, end: float) -> np.ndarray:
    samples = decode_file(path.read_bytes(), max_seconds=600).samples
    return samples[round(start * RATE): round(end * RATE)]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        chromium()
    except RuntimeError as missing:  # the message names the install command
        pytest.fail(str(missing))
    voices = np.concatenate([_cut(CAVE, *BIG_TURN), np.zeros(round(GAP_S * RATE), np.float32), _cut(CAVE, *SMALL_TURN)])
    folder = tmp_path_factory.mktemp("microphone")
    (folder / "two_voices.flac").write_bytes(encode(voices, RATE, "flac", "flac"))
    # A long silence after, for the page to stop in (the fake microphone plays its file in a loop).
    microphone = microphone_wav(folder / "two_voices.flac", folder / "microphone.wav", after_s=6.0)
    with sync_playwright() as driver:
        launched = launch(driver, microphone)
        yield launched
        launched.close()


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
    page.get_by_test_id("stop").click()
    expect(page.get_by_test_id("transcribe-recording")).to_be_visible(timeout=30_000)
    # The first two utterances (a slow stop may also catch the loop's next one).
    assert speakers.all_inner_texts()[:2] == ["big_fish", "SPEAKER_00"]
