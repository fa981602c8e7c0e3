"""The language of each stretch of speech: what the engine's detector hears (``Detector``), as
probabilities over the allowed languages (issue 58).

Detection runs on the encoder output the decoding uses anyway (asr/ctranslate2/language_detection.py):
each window's, and each span's over its own encoder frames. A span alone is a weak witness when it is
short (a 2 s English telephone prompt came out Hungarian), so each window also has Whisper's own
detection over all its frames (language_rule.py takes the main language from these).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

FRAMES_PER_SECOND = 50  # encoder frames (Whisper: 1500 for 30 s)


@dataclass(frozen=True)
class SpanLanguage:
    """A span of speech (seconds, in the time of the audio it was found in) and its languages' probabilities
    (over the allowed languages, summing to 1)."""

    start: float
    end: float
    probabilities: dict[str, float]

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def language(self) -> str:
        return max(self.probabilities, key=self.probabilities.get)

    @property
    def confidence(self) -> float:
        return self.probabilities[self.language]


def span_frames(span: tuple[float, float], window_start: float, frames: int) -> slice | None:
    """The encoder frames of ``span`` (seconds) in a window starting at ``window_start`` that has ``frames``
    frames; None when under two frames: too short to say (the window's languages stand)."""
    first = max(0, int((span[0] - window_start) * FRAMES_PER_SECOND))
    last = min(frames, int(np.ceil((span[1] - window_start) * FRAMES_PER_SECOND)))
    return slice(first, last) if last - first >= 2 else None


def restricted(scores: list[tuple[str, float]], allowed: list[str] | None) -> dict[str, float]:
    probabilities = {token[2:-2]: float(p) for token, p in scores}
    if allowed:
        probabilities = {code: probabilities.get(code, 0.0) for code in allowed}
    total = sum(probabilities.values()) or 1.0
    return {code: p / total for code, p in probabilities.items()}


class Detector(Protocol):
    """What an engine gives the language plan (asr/ctranslate2/language_detection.py)."""

    def window(self, audio: np.ndarray, start: float, end: float,
               spans: list[tuple[float, float]]) -> tuple[SpanLanguage, list[SpanLanguage]]:
        """The window's languages and each span's; the window's encoder output kept for its decoding."""

    def voice(self, audio: np.ndarray) -> dict[str, float]:
        """The languages of one voice's speech packed into one window."""

    def forget(self, audio: np.ndarray, start: float, end: float) -> None:
        """A window's kept encoder output dropped (it will not be decoded whole)."""
