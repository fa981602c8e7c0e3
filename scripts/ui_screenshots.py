"""Screenshots of the web page for the README: the result view, the live view, and the result on a phone.

    python -m scripts.ui_screenshots [--model embedded:base] [--out docs/img]

Starts the server in this process on 127.0.0.1 (the model from --model, the embedded diarization),
opens /ui in Debian's Chromium (support/browser.py), uploads the flite meeting with speakers, names
them, clicks a word (the player seeks there and highlights it), and records three clips through the
fake microphone. Writes ui_result.png, ui_live.png and ui_phone.png to --out.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from support.browser import launch, microphone_wav  # noqa: E402
from support.serving import serve  # noqa: E402

AUDIO = Path(__file__).resolve().parents[1] / "audio"
MEETING = AUDIO / "dialogues" / "flite_meeting.flac"
NAMES = ("Ann", "Raj", "Ben")
LIVE_CLIP = AUDIO / "clips" / "asterisk_dictate_play_help.flac"


def start(model: str) -> str:
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.jobs import JobSettings
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings

    handler = EndpointHandler(settings=ModelSettings(asr_model=model, diarization_model="embedded"))
    jobs = JobSettings(db=Path(tempfile.mkdtemp()) / "jobs.sqlite")
    return serve(create_app(ServerSettings(), handler, job_settings=jobs))


def result_view(page, url: str, out: Path) -> None:
    page.goto(url + "/ui")
    expect(page.get_by_test_id("server-status")).to_contain_text("Model")
    page.get_by_test_id("audio-file").set_input_files(str(MEETING))
    page.get_by_test_id("submit").click()
    expect(page.get_by_test_id("transcript")).to_contain_text("quarterly", timeout=300_000)
    for field, name in zip(page.get_by_test_id("speaker-name").all(), NAMES):
        field.fill(name)
    page.get_by_test_id("transcript").locator(".word", has_text="revenue").first.click()
    page.screenshot(path=str(out / "ui_result.png"), full_page=True)


def live_view(page, url: str, out: Path) -> None:
    page.goto(url + "/ui")
    expect(page.get_by_test_id("server-status")).to_contain_text("Model")
    page.get_by_test_id("record").click()
    live = page.get_by_test_id("live-transcript")
    expect(live.locator("p:not(.pending)")).to_have_count(1, timeout=60_000)  # one utterance done
    expect(live.locator("p")).to_have_count(2, timeout=60_000)  # the clip again, from the microphone's loop
    expect(live.locator("p").last).to_contain_text(re.compile(r"\w"), timeout=60_000)  # its first words
    page.screenshot(path=str(out / "ui_live.png"))
    page.get_by_test_id("stop").click()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    url = start(args.model)
    microphone = microphone_wav(LIVE_CLIP, Path(tempfile.mkdtemp()) / "microphone.wav", after_s=1.5)
    with sync_playwright() as driver:
        browser = launch(driver, microphone)
        desktop = browser.new_page(viewport={"width": 1100, "height": 900})
        result_view(desktop, url, args.out)
        live_view(desktop, url, args.out)
        phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2)
        result_view(phone, url, Path(tempfile.mkdtemp()))  # the same steps; only the phone's shot is kept
        phone.screenshot(path=str(args.out / "ui_phone.png"))
        browser.close()
    print(f"wrote {', '.join(str(args.out / name) for name in ('ui_result.png', 'ui_live.png', 'ui_phone.png'))}")


if __name__ == "__main__":
    main()
