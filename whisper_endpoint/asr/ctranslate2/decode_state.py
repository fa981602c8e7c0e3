"""One request's decoding on CTranslate2: what each step reads (the model, the audio, the options),
and the ``decoding`` block and counter they fill; and a window decoded alone, as Whisper's own seek
would decode it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from whisper_endpoint.asr import cost, tokens
from whisper_endpoint.asr.ctranslate2.model import CountingModel, consume
from whisper_endpoint.asr.long_form import recovery, window_fallback, windows
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.types import SAMPLE_RATE


@dataclass
class DecodeState:
    model: CountingModel
    samples: np.ndarray
    options: InferenceConfig
    kwargs: dict  # faster-whisper's transcribe options for this request
    context: DecodeContext
    counter: cost.WindowCounter
    decoding: dict = field(default_factory=dict)  # the response's ``decoding`` block, filled as it goes

    def alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict) -> list:
        """``window`` of ``audio`` through the sequential decoder, decoded again the plain way after an
        error (window_fallback.py)."""
        return window_fallback.decoded(lambda options: self._decode_alone(audio, window, options), kwargs,
                                       named(window), self.counter)

    def _decode_alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict) -> list:
        """A window's remainder through the sequential decoder, as Whisper's own seek would decode it:
        with its temperature fallback, which the batched decoder lacks (a batched retry of a short
        remainder can loop on one word), and a token cap."""
        piece = audio[round(window.start * SAMPLE_RATE): round(window.end * SAMPLE_RATE)]
        # A cap far above any speech rate that still stops a loop early (each fallback retries), within
        # what the decoder context leaves after the longest prompt (tokens.py). faster-whisper puts the
        # hotwords before up to 223 tokens of previous text on each later seek: they come off it too.
        hotwords = kwargs.get("hotwords")
        reserve = len(self.model.hf_tokenizer.encode(" " + hotwords.strip(), add_special_tokens=False).ids) \
            if hotwords else 0
        limit = min(math.ceil(10 * (window.end - window.start)) + 16,
                    tokens.output_budget(self.model.max_length) - reserve)
        generator, _ = self.model.transcribe(piece, vad_filter=False, max_new_tokens=limit, **kwargs)
        segments, _ = consume(generator)
        return [windows.shifted(segment, window.start) for segment in segments]


def retry(kwargs: dict) -> dict:
    """A failed window's second decode: sequential, with the temperature fallback, without the previous
    text (a loop feeds on it), the best of two samples at each temperature above 0. The fallback goes
    hotter on repetition (compression ratio) only, and not far down the schedule (recovery.py's
    ``retry_temperatures``)."""
    return {**kwargs, "temperature": recovery.retry_temperatures(kwargs["temperature"]),
            "condition_on_previous_text": False,
            "initial_prompt": None, "best_of": 2, "log_prob_threshold": None}


def named(window: windows.Window) -> str:
    return f"a window of {window.end - window.start:.1f} s of speech"
