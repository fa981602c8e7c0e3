"""Whisper's language token on transformers, over a window, over each span of speech in it, or over a
voice's speech packed into one window: asr/languages' detector (``span_languages.Detector``), as the
CTranslate2 backend's (asr/ctranslate2/language_detection.py) hears them.

A window is encoded once: its output is kept for its decoding (kept_encoder.py). A span's language is
Whisper's language token over the encoder frames of that span alone (the decoder's cross-attention takes
any number of frames); each window also gets Whisper's own detection over all its frames.
"""

from __future__ import annotations

import numpy as np
import torch

from whisper_endpoint.asr.languages.span_languages import SpanLanguage, restricted, span_frames
from whisper_endpoint.asr.long_form import windows
from whisper_endpoint.asr.transformers import kept_encoder
from whisper_endpoint.core.types import SAMPLE_RATE


class LanguageDetector:
    def __init__(self, backend, allowed: list[str] | None):
        """``backend``: the TransformersBackend whose model, features and tokenizer detect."""
        self.backend, self.allowed = backend, allowed
        config = backend.model.generation_config
        self.language_ids = torch.tensor(list(config.lang_to_id.values()))
        self.language_tokens = list(config.lang_to_id)
        self.start = torch.tensor([[config.decoder_start_token_id]], device=backend.device)

    def window(self, audio: np.ndarray, start: float, end: float,
               spans: list[tuple[float, float]]) -> tuple[SpanLanguage, list[SpanLanguage]]:
        """The languages of the window ``start``-``end`` of ``audio`` and of each span (start, end, in
        seconds) in it; the window's encoder output is kept for its decoding."""
        encoded = kept_encoder.encode_kept(self._encoder(), self._features(windows.audio_of(audio, start, end)))
        window = SpanLanguage(spans[0][0] if spans else start, spans[-1][1] if spans else start,
                              self._languages(encoded))
        if len(spans) < 2:  # one span: the window's detection is its own, and a surer one
            return window, [SpanLanguage(s, e, window.probabilities) for s, e in spans]
        return window, [self._span(encoded, start, span, window) for span in spans]

    def voice(self, audio: np.ndarray) -> dict[str, float]:
        """The languages of one voice's speech packed into ``audio`` (one window, not kept)."""
        features = self._features(audio[: self.backend.pipe.feature_extractor.n_samples])
        with torch.inference_mode():
            encoded = self._encoder()(input_features=features).last_hidden_state[0]
        return self._languages(encoded)

    def forget(self, audio: np.ndarray, start: float, end: float) -> None:
        """The window's kept encoder output is dropped (it was cut in pieces: not asked for again)."""
        kept_encoder.forget(self._features(windows.audio_of(audio, start, end)))

    def _span(self, encoded: torch.Tensor, window_start: float, span: tuple[float, float],
              window: SpanLanguage) -> SpanLanguage:
        start, end = span
        inside = span_frames(span, window_start, len(encoded))
        if inside is None:
            return SpanLanguage(start, end, window.probabilities)
        return SpanLanguage(start, end, self._languages(encoded[inside]))

    def _languages(self, encoded: torch.Tensor) -> dict[str, float]:
        """Whisper's language probabilities after <|startoftranscript|> over ``encoded`` (frames, d_model)."""
        model = self.backend.model
        with torch.inference_mode():
            hidden = model.model.decoder(input_ids=self.start, encoder_hidden_states=encoded[None],
                                         use_cache=False).last_hidden_state
            logits = model.proj_out(hidden)[0, -1].float()
        probabilities = torch.softmax(logits[self.language_ids.to(logits.device)], dim=-1).tolist()
        return restricted(list(zip(self.language_tokens, probabilities)), self.allowed)

    def _features(self, audio: np.ndarray) -> torch.Tensor:
        """A window's features as the pipeline computes them (so that its decoding finds the kept output)."""
        extractor = self.backend.pipe.feature_extractor
        features = extractor(audio, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features
        return features.to(self.backend.device, self.backend.dtype)

    def _encoder(self):
        return self.backend.model.get_encoder()
