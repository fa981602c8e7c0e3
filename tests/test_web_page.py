"""The web page (GET /ui) in a real browser: Debian's Chromium driven by Playwright, against live servers on
loopback with the embedded models (tiny.en and the embedded diarization), its microphone Chromium's fake
device fed from a WAV file. Every page checks that nothing was fetched from another host and that no
script failed or was refused by the page's Content-Security-Policy.

Three servers serve the module: an open one whose page sends files over 30 s through the jobs API, one
with an API key (no jobs), and one with a 4 KiB body limit (no jobs) for the errors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import requests
from openai import OpenAI
from playwright.sync_api import expect, sync_playwright

from support.browser import chromium, launch, microphone_wav
from support.metrics import wer
from support.paths import CLIPS, AUDIO
from support.serving import CLIP, TEXT, live_server, wait_until
from whisper_endpoint import formats
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

KEY = "web-page-test-key-0123456789"
MEETING = AUDIO / "dialogues" / "flite_meeting.flac"  # 36 s, 3 speakers: over the open server's 30 s
STATIC = Path(__file__).resolve().parents[1] / "whisper_endpoint" / "static"  # index.html, and ui/: its modules


def launched_browser(clip: Path, folder: Path, **silence):
    """Debian's Chromium with ``clip`` as its fake microphone (``microphone_wav``'s before_s/after_s), for a
    module's fixture to yield from; a missing browser fails the test, naming the install command."""
    try:
        chromium()
    except RuntimeError as missing:
        pytest.fail(str(missing))
    microphone = microphone_wav(clip, folder / "microphone.wav", **silence)
    with sync_playwright() as driver:
        launched = launch(driver, microphone)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    yield from launched_browser(CLIPS / CLIP, tmp_path_factory.mktemp("microphone"))


class Page:
    """A fresh browser context on ``server``: its page, and what it fetched and logged."""

    def __init__(self, browser, server, **options):
        self.server = server
        self.context = browser.new_context(accept_downloads=True, viewport={"width": 1100, "height": 900}, **options)
        self.page = self.context.new_page()
        self.foreign, self.failures = [], []
        self.page.on("request", self._request)
        self.page.on("pageerror", lambda error: self.failures.append(f"page error: {error}"))
        self.page.on("console", self._console)

    def _request(self, request) -> None:
        url = request.url
        if not (url.startswith(self.server.url + "/") or url.startswith(("blob:", "data:"))):
            self.foreign.append(url)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text:
            self.failures.append(message.text)

    def open(self, path: str = "/ui"):
        self.page.goto(self.server.url + path)
        expect(self.page.get_by_test_id("server-status")).to_contain_text("Model embedded:tiny.en")
        return self.page

    def close(self) -> None:
        self.context.close()
        assert self.foreign == [], f"the page fetched from other hosts: {self.foreign}"
        assert self.failures == [], self.failures


@pytest.fixture
def web(browser):
    pages = []

    def open_page(server, **options) -> Page:
        pages.append(Page(browser, server, **options))
        return pages[-1]

    yield open_page
    for page in pages:
        page.close()


@pytest.fixture(scope="module")
def open_server(diarizing_handler, tmp_path_factory):
    jobs = JobSettings(db=tmp_path_factory.mktemp("web-jobs") / "jobs.sqlite", poll_s=0.2)
    with live_server(create_app(ServerSettings(ui_jobs_after_s=30), diarizing_handler, job_settings=jobs)) as server:
        yield server


@pytest.fixture(scope="module")
def keyed_server(diarizing_handler):
    app = create_app(ServerSettings(api_keys=KEY), diarizing_handler, job_settings=JobSettings(enabled=False))
    with live_server(app) as server:
        yield server


@pytest.fixture(scope="module")
def small_server(diarizing_handler):
    app = create_app(ServerSettings(max_body_bytes=4096), diarizing_handler, job_settings=JobSettings(enabled=False))
    with live_server(app) as server:
        yield server


# Records whether the timer of recorder.js's stop() (FINISH_TIMEOUT_MS) fired: one flag a timer.
WATCH_FINISH_TIMER = """(delay) => {
  const setTimer = window.setTimeout;
  window.finishTimers = [];
  window.setTimeout = (callback, ms, ...rest) => {
    if (ms !== delay) return setTimer(callback, ms, ...rest);
    const index = window.finishTimers.push(false) - 1;
    return setTimer(() => { window.finishTimers[index] = true; callback(); }, ms, ...rest);
  };
}"""


def _finish_timeout_ms() -> int:
    source = (STATIC / "ui" / "recorder.js").read_text(encoding="utf-8")
    return int(re.search(r"const FINISH_TIMEOUT_MS = (\d+);", source).group(1))


def _position(page) -> float:
    return page.get_by_test_id("player").evaluate("player => player.currentTime")


def _words(page) -> str:
    return " ".join(page.get_by_test_id("transcript").locator(".word").all_inner_texts())


def test_the_page_opens_without_a_key_and_names_no_other_host(keyed_server):
    home = requests.get(keyed_server.url + "/", allow_redirects=False, timeout=10)
    assert home.status_code == 307 and home.headers["location"] == "/ui"
    page = requests.get(keyed_server.url + "/ui", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    ids = set(re.findall(r'data-testid="([\w-]+)"', page.text))
    assert {"audio-file", "language", "diarize", "submit", "record", "stop", "live-transcript", "transcript",
            "speaker-timeline", "player", "error", "progress"} <= ids  # and download-NAME, one per format:
    config = requests.get(keyed_server.url + "/ui/config.json", timeout=10).json()
    assert config["auth_required"] is True and config["diarization"] is True and config["jobs"] is False
    assert config["downloads"] == ["txt", "srt", "vtt", "tsv"]  # the page adds json
    assert page.content == (STATIC / "index.html").read_bytes()
    for path in [STATIC / "index.html", *(STATIC / "ui").iterdir()]:  # every file is served; none names another host
        if path.parent.name == "ui":
            served = requests.get(f"{keyed_server.url}/ui/static/{path.name}", timeout=10)
            assert served.status_code == 200 and served.content == path.read_bytes()
            assert served.headers["cache-control"] == "no-cache"  # an upgraded server never runs old modules
        hosts = set(re.findall(r"\b(?:https?|wss?)://[^\s\"'`]+", path.read_text())) - {"http://www.w3.org/2000/svg"}
        assert hosts == set(), (path.name, hosts)
    assert requests.get(keyed_server.url + "/ui/static/index.html", timeout=10).status_code == 404  # CSP: /ui only
    # The routes the page calls are guarded as before: POST / is still the toolkit's.
    assert requests.post(keyed_server.url + "/", data=b"x", timeout=10).status_code == 401
    assert requests.post(keyed_server.url + "/formats/srt", json={}, timeout=10).status_code == 401


def test_ui_enabled_false_serves_no_page(diarizing_handler):
    app = create_app(ServerSettings(ui_enabled=False), diarizing_handler, job_settings=JobSettings(enabled=False))
    with live_server(app) as server:
        assert requests.get(server.url + "/ui", timeout=10).status_code == 404
        assert requests.get(server.url + "/", timeout=10).status_code == 405  # POST / only, as before the page


def test_formats_route_renders_what_the_api_renders(keyed_server):
    result = {"text": "Hi. Yes.", "chunks": [], "speakers": [
        {"speaker": "Ann Lee", "text": "Hi.", "timestamp": [0.0, 1.2]},
        {"speaker": "SPEAKER_01", "text": "Yes.", "timestamp": [1.5, None]}]}
    auth = {"Authorization": f"Bearer {KEY}"}
    for name in ("txt", "srt", "vtt", "tsv"):
        reply = requests.post(f"{keyed_server.url}/formats/{name}", json=result, headers=auth, timeout=10)
        assert reply.status_code == 200, reply.text
        assert reply.text == formats.render(result, name).body
    bad = requests.post(keyed_server.url + "/formats/srt", json={"speakers": [{"speaker": "A", "text": "x"}]},
                        headers=auth, timeout=10)
    assert bad.status_code == 422 and "timestamp" in bad.json()["error"]
    newline = {"speakers": [{"speaker": " \n ", "text": "x", "timestamp": [0, 1]}]}
    assert requests.post(keyed_server.url + "/formats/srt", json=newline, headers=auth, timeout=10).status_code == 422
    unknown = requests.post(keyed_server.url + "/formats/docx", json=result, headers=auth, timeout=10)
    assert unknown.status_code == 422 and "srt" in unknown.json()["error"]
    many = requests.post(keyed_server.url + "/formats/srt", json={"chunks": [{"text": 1}] * 2000}, headers=auth,
                         timeout=10)
    assert many.status_code == 422 and len(many.json()["error"]) < 2000 and "more" in many.json()["error"]
    for body in (b'{"chunks": [{"text": "a", "timestamp": [NaN, 1]}]}', b"[1, 2]", b"{not json"):
        reply = requests.post(keyed_server.url + "/formats/srt", data=body, timeout=10,
                              headers={**auth, "Content-Type": "application/json"})
        assert reply.status_code == 422, (body, reply.text)


def test_a_meeting_upload_follows_its_job_shows_three_speakers_and_survives_a_reload(web, open_server, tmp_path):
    session = web(open_server)
    page = session.open("/")  # redirected to /ui
    page.get_by_test_id("audio-file").set_input_files(str(MEETING))
    expect(page.get_by_test_id("diarize")).to_be_checked()
    page.get_by_test_id("submit").click()
    expect(page.get_by_test_id("progress")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/ui\?job=\w+"))  # over 30 s: a job, whose id the URL keeps
    expect(page.get_by_test_id("transcript")).to_contain_text("quarterly", timeout=120_000)

    reference = " ".join(turn["text"] for turn in json.loads(MEETING.with_suffix(".json").read_text())["turns"])
    assert wer([reference], [_words(page)]) < 0.15  # tiny.en: "12%" for "twelve percent", "Turnwind"
    names = page.get_by_test_id("speaker-name")
    expect(names).to_have_count(3)
    timeline = page.get_by_test_id("speaker-timeline")
    expect(timeline.locator("g[data-speaker]")).to_have_count(3)
    assert all(row.locator("rect").count() >= 1 for row in timeline.locator("g[data-speaker]").all())
    expect(page.get_by_test_id("player")).to_be_visible()
    for name in ("txt", "srt", "vtt", "tsv", "json"):
        expect(page.get_by_test_id(f"download-{name}")).to_be_visible()

    # Renamed speakers in the downloads: the API's own srt with the new name.
    names.first.fill("Ann")
    expect(timeline.locator("g[data-speaker] text").first).to_have_text("Ann")
    with page.expect_download() as download:
        page.get_by_test_id("download-srt").click()
    page_srt = Path(download.value.path()).read_text()
    client = OpenAI(base_url=open_server.url + "/v1", api_key="unused")
    with MEETING.open("rb") as audio:
        api_srt = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="srt")
    assert "[SPEAKER_00]" in api_srt
    assert page_srt == api_srt.replace("[SPEAKER_00]", "[Ann]")
    with page.expect_download() as download:
        page.get_by_test_id("download-json").click()
    saved = json.loads(Path(download.value.path()).read_text())
    assert {turn["speaker"] for turn in saved["speakers"]} == {"Ann", "SPEAKER_01", "SPEAKER_02"}

    # "Remember this voice": the renamed speaker saved to the library from the job's kept voice.
    page.get_by_test_id("remember-voice").first.click()
    expect(page.get_by_test_id("remember-voice").first).to_have_text("Remembered as Ann")
    library = requests.get(f"{open_server.url}/v1/speakers", timeout=10).json()["data"]
    assert [entry["name"] for entry in library] == ["Ann"]
    requests.delete(f"{open_server.url}/v1/speakers/{library[0]['id']}", timeout=10)  # the other tests' server

    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing wider than the screen
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390

    words = _words(page)
    page.reload()  # the job's result again, from the id in the URL
    expect(page.get_by_test_id("transcript")).to_contain_text("quarterly")
    assert _words(page) == words
    expect(page.get_by_test_id("player")).to_be_hidden()  # the audio stayed in the tab that sent it


def test_cancel_deletes_the_job_and_stops_its_decode(web, open_server):
    page = web(open_server).open()
    page.get_by_test_id("audio-file").set_input_files(str(MEETING))
    page.get_by_test_id("submit").click()
    expect(page).to_have_url(re.compile(r"/ui\?job=\w+"))
    job = page.url.split("job=")[1]
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("progress")).to_be_hidden()
    expect(page).to_have_url(open_server.url + "/ui")
    # The page sends DELETE and moves on without waiting for its answer: the job is gone soon after.
    wait_until(lambda: requests.get(f"{open_server.url}/jobs/{job}", timeout=10).status_code == 404, timeout=10)
    expect(page.get_by_test_id("error")).to_be_hidden()
    expect(page.get_by_test_id("submit")).to_be_enabled()


def test_a_recording_with_an_api_key_streams_live_text_then_transcribes_and_seeks(web, keyed_server):
    session = web(keyed_server)
    page = session.page
    page.goto(keyed_server.url + "/ui")
    expect(page.get_by_test_id("key-form")).to_be_visible()
    page.get_by_test_id("api-key").fill("not-the-key-0123456789")
    page.get_by_test_id("key-submit").click()
    expect(page.get_by_test_id("error")).to_contain_text("key was not accepted")
    page.get_by_test_id("api-key").fill(KEY)
    page.get_by_test_id("key-submit").click()
    expect(page.get_by_test_id("key-form")).to_be_hidden()

    page.get_by_test_id("record").click()  # through a client secret: a WebSocket carries no Authorization header
    expect(page.get_by_test_id("live-transcript")).to_contain_text(
        re.compile(r"circuits are busy", re.IGNORECASE), timeout=30_000)
    page.evaluate(WATCH_FINISH_TIMER, _finish_timeout_ms())
    page.get_by_test_id("stop").click()
    expect(page.get_by_test_id("transcribe-recording")).to_be_visible(timeout=60_000)
    # The last transcript ended the stop, not its timer: by order (the timer had not fired), not by time.
    assert page.evaluate("window.finishTimers") in ([], [False])
    expect(page.get_by_test_id("live-transcript").locator(".pending")).to_have_count(0)
    assert wer([TEXT], [page.get_by_test_id("live-transcript").locator(".live-text").first.inner_text()]) < 0.25

    page.get_by_test_id("transcribe-recording").click()
    expect(page.get_by_test_id("transcript")).to_contain_text("circuits", timeout=60_000)
    word = page.get_by_test_id("transcript").locator(".word", has_text="busy").first
    start = float(word.get_attribute("data-start"))
    assert start > 0.5  # the recording starts with the microphone's silence
    word.click()
    assert _position(page) == pytest.approx(start, abs=0.05)
    expect(word).to_have_class(re.compile(r"\bcurrent\b"))
    turn = page.get_by_test_id("transcript").locator(".seek").first  # the keyboard's way: a turn's time
    turn.focus()
    page.keyboard.press("Enter")
    assert _position(page) == pytest.approx(float(turn.get_attribute("data-start")), abs=0.05)


def test_detect_only_among_sends_the_languages_chosen(web, small_server):
    page = web(small_server).open()
    expect(page.get_by_test_id("languages")).to_be_hidden()  # an English-only model: nothing to choose
    sent = page.evaluate("""async () => {
      const { parametersFor } = await import("/ui/static/transcribe.js");
      const config = { multilingual: true, diarization: false };
      return [["", ["nl", "cs"]], ["nl", ["nl", "cs"]], ["", []]].map(
        ([language, languages]) => parametersFor({ language, languages }, config).languages);
    }""")
    assert sent == [["nl", "cs"], None, None]


def test_errors_are_sentences(web, small_server, tmp_path):
    page = web(small_server).open()
    notes = tmp_path / "notes.txt"
    notes.write_text("not audio at all")
    page.get_by_test_id("audio-file").set_input_files(str(notes))
    page.get_by_test_id("submit").click()
    expect(page.get_by_test_id("error")).to_have_text(
        "This file is not audio or video the server can read. Choose an audio or video file.")
    page.get_by_test_id("audio-file").set_input_files(str(MEETING))
    page.get_by_test_id("submit").click()
    expect(page.get_by_test_id("error")).to_contain_text("This file is too long or too large for this server.")
    expect(page.get_by_test_id("result")).to_be_hidden()
    # The statuses no request of this server gives here, through the page's own module.
    sentences = page.evaluate("""async () => {
        const { describeError } = await import("/ui/static/api.js");
        return {
            busy: describeError(429, {error: {message: "queue full"}}, "7").message,
            key: describeError(401, {error: "missing or invalid API key"}).message,
            loading: describeError(503, {error: "loading", code: "loading"}, "5").message,
            late: describeError(504, {error: "the request passed its deadline of 5 s"}).message,
        };
    }""")
    assert sentences == {
        "busy": "The server is busy with other requests. Try again in 7 seconds.",
        "key": "This server needs an API key. Enter a valid key to continue.",
        "loading": "The server is still starting (loading its model). Try again in 5 seconds.",
        "late": "The transcription took longer than this server allows for one request. "
                "(the request passed its deadline of 5 s)",
    }
