"""What every ASR backend offers: load once, then ``transcribe(samples, options) -> Transcript``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from whisper_endpoint.errors import UnsupportedOptionError
from whisper_endpoint.results import Transcript


@dataclass(frozen=True)
class DecodeOptions:
    """The decoding part of a request, built once from ``InferenceConfig``."""

    task: Literal["transcribe", "translate"] = "transcribe"
    language: str | None = None
    beam_size: int = 1
    timestamps: Literal["none", "segment", "word"] = "segment"
    initial_prompt: str | None = None
    vad_filter: bool = False
    batch_size: int = 24
    chunk_length_s: int = 30
    assisted: bool = False
    recover_dropped_speech: bool = True

    @classmethod
    def from_config(cls, config) -> "DecodeOptions":
        return cls(
            task=config.task,
            language=config.language,
            beam_size=config.beam_size,
            timestamps=config.return_timestamps,
            initial_prompt=config.initial_prompt,
            vad_filter=config.vad_filter,
            batch_size=config.batch_size,
            chunk_length_s=config.chunk_length_s,
            assisted=config.assisted,
            recover_dropped_speech=config.recover_dropped_speech,
        )


class ASRBackend(Protocol):
    name: str
    model_name: str
    is_multilingual: bool

    def transcribe(self, samples: np.ndarray, options: DecodeOptions) -> Transcript: ...


def check_language_options(options: DecodeOptions, *, is_multilingual: bool, model_name: str) -> None:
    """English-only models can neither translate nor transcribe another language: say so up front."""
    if is_multilingual:
        return
    if options.task == "translate":
        raise UnsupportedOptionError(
            f"task 'translate' needs a multilingual model; {model_name} is English-only "
            "(use task 'transcribe', or a multilingual ASR_MODEL such as embedded:base)"
        )
    if options.language not in (None, "en"):
        raise UnsupportedOptionError(
            f"language {options.language!r} needs a multilingual model; {model_name} is "
            "English-only (omit language or use 'en')"
        )
