"""Debian's Chromium driven by Playwright, as the web page's tests and screenshots use it: no browser
download, no traffic of the browser's own, and a fake microphone that plays a WAV file (in a loop)."""

from __future__ import annotations

import shutil
import wave
from pathlib import Path

import numpy as np

from support.audio import pcm16

INSTALL = "bash scripts/setup_browser.sh (or: sudo apt-get update && sudo apt-get install -y chromium chromium-driver)"
ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
        "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream"]
RATE = 16000


def chromium() -> str:
    """The path of Debian's chromium; RuntimeError naming the install command when it is missing."""
    path = shutil.which("chromium")
    if path is None:
        raise RuntimeError(f"Debian's chromium is not installed; install it with: {INSTALL}")
    return path


def microphone_wav(clip: Path, out: Path, *, before_s: float = 0.5, after_s: float = 2.0) -> Path:
    """What the fake microphone plays: silence, ``clip``, silence (the pause ends the turn), 16-bit mono."""
    samples = np.concatenate([np.zeros(round(before_s * RATE), np.int16), pcm16(clip, RATE),
                              np.zeros(round(after_s * RATE), np.int16)])
    with wave.open(str(out), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(samples.astype("<i2").tobytes())
    return out


def launch(driver, microphone: Path | None = None):
    """A headless Chromium from ``sync_playwright()``'s ``driver``, its microphone playing ``microphone``."""
    args = ARGS + ([f"--use-file-for-fake-audio-capture={microphone}"] if microphone else [])
    return driver.chromium.launch(executable_path=chromium(), args=args)
