"""Whisper's language token on CTranslate2, over a window, over each span of speech in it, or over a
voice's speech packed into one window (asr/languages/ decides from what this hears).

A window (30 s at most) is encoded once, through the request's kept encoder outputs (asr/encoder_outputs.py), so
the decoding of the same window reuses it. The language of one span in it is Whisper's language token
over the encoder frames of that span alone (20 ms a frame): the decoder's cross-attention takes any
number of frames, and the frames outside the span (the other speakers' turns, in other languages) are
left out. One decoder step per span: no second encoder pass. Each window also gets Whisper's own
detection over all its 1500 frames, as Whisper detects.
"""

from __future__ import annotations

import ctranslate2
import numpy as np
from faster_whisper.audio import pad_or_trim

from whisper_endpoint.asr import encoder_outputs
from whisper_endpoint.asr.languages.span_languages import SpanLanguage, restricted, span_frames
from whisper_endpoint.core.types import SAMPLE_RATE


class LanguageDetector:
    """asr/languages' detector (``languages.span_languages.Detector``) on a faster-whisper model."""

    def __init__(self, model, allowed: list[str] | None):
        self.model, self.allowed = model, allowed

    def window(self, audio: np.ndarray, start: float, end: float,
               spans: list[tuple[float, float]]) -> tuple[SpanLanguage, list[SpanLanguage]]:
        """The languages of the window ``start``-``end`` of ``audio`` and of each span (start, end, in
        seconds) in it; the window's encoder output is kept for its decoding."""
        output = self.model.encode_kept(_window_features(self.model, audio, start, end))
        window = SpanLanguage(spans[0][0] if spans else start, spans[-1][1] if spans else start,
                              restricted(self.model.model.detect_language(output)[0], self.allowed))
        if len(spans) < 2:  # one span: the window's detection is its own, and a surer one
            return window, [SpanLanguage(s, e, window.probabilities) for s, e in spans]
        encoded = _as_array(output, self.model)[0]  # shape: (1500, d_model)
        return window, [self._span(encoded, start, span, window) for span in spans]

    def voice(self, audio: np.ndarray) -> dict[str, float]:
        """The languages of one voice's speech packed into ``audio`` (one window, not kept)."""
        features = pad_or_trim(self.model.feature_extractor(audio)[..., :-1])
        return restricted(self.model.model.detect_language(self.model.encode(features))[0], self.allowed)

    def forget(self, audio: np.ndarray, start: float, end: float) -> None:
        """The window's kept encoder output is dropped (it was cut in pieces: not asked for again)."""
        encoder_outputs.forget(_window_features(self.model, audio, start, end))

    def _span(self, encoded: np.ndarray, window_start: float, span: tuple[float, float],
              window: SpanLanguage) -> SpanLanguage:
        start, end = span
        inside = span_frames(span, window_start, len(encoded))
        if inside is None:
            return SpanLanguage(start, end, window.probabilities)
        frames = ctranslate2.StorageView.from_array(np.ascontiguousarray(encoded[None, inside]))
        if self.model.model.device != "cpu":
            frames = frames.to_device(ctranslate2.Device.cuda)
        return SpanLanguage(start, end, restricted(self.model.model.detect_language(frames)[0], self.allowed))


def _window_features(model, audio: np.ndarray, start: float, end: float) -> np.ndarray:
    """A window's features exactly as faster-whisper's batched pipeline computes them (so that the
    encoder cache finds them again)."""
    piece = audio[int(start * SAMPLE_RATE): int(end * SAMPLE_RATE)]
    return pad_or_trim(model.feature_extractor(piece)[..., :-1])


def _as_array(encoded, model) -> np.ndarray:
    if model.model.device != "cpu":
        encoded = encoded.to_device(ctranslate2.Device.cpu)
    return np.asarray(encoded)
