"""The language of each stretch of speech, from the encoder output the decoding uses anyway (issue 58).

Each window (30 s at most) is encoded once, through the request's encoder cache (encoder_cache.py),
so the decoding of the same window reuses it. The language of one span of speech in it is Whisper's
language token over the encoder frames of that span alone (20 ms a frame): the decoder's
cross-attention takes any number of frames, and the frames outside the span (the other speakers'
turns, in other languages) are left out. One decoder step per span: no second encoder pass.

A span alone is a weak witness when it is short (a 2 s English telephone prompt came out Hungarian),
so each window also gets Whisper's own detection over all its 1500 frames, as Whisper detects
(language_rule.py takes the main language from these).
"""

from __future__ import annotations

from dataclasses import dataclass

import ctranslate2
import numpy as np
from faster_whisper.audio import pad_or_trim

from whisper_endpoint.core.types import SAMPLE_RATE

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


def window_features(model, audio: np.ndarray, start: float, end: float) -> np.ndarray:
    """A window's features exactly as faster-whisper's batched pipeline computes them (so that the
    encoder cache finds them again)."""
    piece = audio[int(start * SAMPLE_RATE): int(end * SAMPLE_RATE)]
    return pad_or_trim(model.feature_extractor(piece)[..., :-1])


def detect(model, features: np.ndarray, window_start: float, spans: list[tuple[float, float]],
           allowed: list[str] | None) -> tuple[SpanLanguage, list[SpanLanguage]]:
    """The languages of the window whose ``features`` (as ``window_features`` or faster-whisper's
    ``transcribe`` make them) start at ``window_start`` (its start and end: its spans'), and of each
    span (start, end, in seconds) in it; the window's encoder output is kept for its decoding."""
    output = model.encode_kept(features)
    whole = model.model.detect_language(output)[0]
    window = SpanLanguage(spans[0][0] if spans else window_start, spans[-1][1] if spans else window_start,
                          restricted(whole, allowed))
    if len(spans) < 2:  # one span: the window's detection is its own, and a surer one
        return window, [SpanLanguage(start, end, window.probabilities) for start, end in spans]
    encoded = _as_array(output, model)[0]  # shape: (1500, d_model)
    found = []
    for start, end in spans:
        first = max(0, int((start - window_start) * FRAMES_PER_SECOND))
        last = min(len(encoded), int(np.ceil((end - window_start) * FRAMES_PER_SECOND)))
        if last - first < 2:  # too short to say: the window's
            found.append(SpanLanguage(start, end, window.probabilities))
            continue
        frames = ctranslate2.StorageView.from_array(np.ascontiguousarray(encoded[None, first:last]))
        if model.model.device != "cpu":
            frames = frames.to_device(ctranslate2.Device.cuda)
        scores = model.model.detect_language(frames)[0]
        found.append(SpanLanguage(start, end, restricted(scores, allowed)))
    return window, found


def restricted(scores: list[tuple[str, float]], allowed: list[str] | None) -> dict[str, float]:
    probabilities = {token[2:-2]: float(p) for token, p in scores}
    if allowed:
        probabilities = {code: probabilities.get(code, 0.0) for code in allowed}
    total = sum(probabilities.values()) or 1.0
    return {code: p / total for code, p in probabilities.items()}


def _as_array(encoded, model) -> np.ndarray:
    if model.model.device != "cpu":
        encoded = encoded.to_device(ctranslate2.Device.cpu)
    return np.asarray(encoded)
