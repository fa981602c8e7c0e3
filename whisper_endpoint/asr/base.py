"""What every ASR backend offers: load once, then ``transcribe(samples, options, context) -> Transcript``.

``options`` is the request's own ``InferenceConfig``: backends read the fields they use from it.
``context`` (optional) is the request's ``DecodeContext``: backends ``report`` each decoded window
to it, which is where a decode is stopped (deadline, client gone, shutdown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.errors import UnsupportedOptionError
from whisper_endpoint.core.types import Transcript


@dataclass(frozen=True)
class EngineSetup:
    """Where and how an engine runs, as the loader (asr/__init__.py) decided from the settings."""

    model_name: str  # as the settings name it (the response's ``decoding.model``)
    device: str
    max_batch_size: int = 8
    compute_type: str = "default"  # CTranslate2's
    cpu_threads: int = 0  # CTranslate2's intra-op threads (0: its own default)
    num_workers: int = 1  # CTranslate2's workers: requests decoded at once


class ASRBackend(Protocol):
    name: str
    model_name: str
    is_multilingual: bool

    def transcribe(
        self, samples: np.ndarray, options: InferenceConfig, context: DecodeContext | None = None
    ) -> Transcript: ...


def check_language_options(options: InferenceConfig, *, is_multilingual: bool, model_name: str) -> None:
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
    others = [code for code in options.languages or () if code != "en"]
    if others:
        raise UnsupportedOptionError(
            f"languages {others} need a multilingual model; {model_name} is English-only (omit languages or use ['en'])"
        )
