"""The systems under test: the handler (public API only) and the raw backends on the same weights."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

THREADS = 1  # one thread everywhere: the machine has 2 cores shared with other jobs


def settings(model: str, **values):
    from whisper_endpoint.core.config import ModelSettings

    values.setdefault("cpu_threads", THREADS)
    # The items compare batch sizes up to 24 with the raw backends at 24: the CPU default cap (8) would
    # change what they measure.
    values.setdefault("max_batch_size", 24)
    cache = os.environ.get("MODEL_CACHE_DIR")
    if cache:
        values.setdefault("model_cache_dir", Path(cache))
    return ModelSettings(asr_model=model, **values)


@functools.cache
def handler(model: str, **values):
    """One handler per configuration for the whole run: items share loaded models."""
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=settings(model, **values))


def ask(handler_, audio: np.ndarray, **parameters) -> dict:
    """One request as a client sends it (an array input), through the handler's public call."""
    return handler_({"inputs": {"array": audio, "sampling_rate": 16000}, "parameters": parameters})


def ctranslate2_dir(model: str) -> Path:
    from whisper_endpoint.weights import embedded

    return embedded.assemble(embedded.lookup(model), settings(model).model_cache_dir)


def transformers_dir(model: str) -> Path:
    from whisper_endpoint.weights.convert import converted_model_dir

    return converted_model_dir(ctranslate2_dir(model), settings(model).model_cache_dir)


def raw_faster_whisper(model: str, compute_type: str = "int8"):
    from faster_whisper import WhisperModel

    return WhisperModel(str(ctranslate2_dir(model)), device="cpu", compute_type=compute_type, cpu_threads=THREADS)


def fw_text(segments) -> str:
    return "".join(segment.text for segment in segments).strip()


def raw_pipeline(model: str, attention: str | None = None):
    """transformers' ASR pipeline as a user builds it on the converted weights (fp32 on CPU)."""
    from transformers import pipeline

    kwargs = {"attn_implementation": attention} if attention else {}
    pipe = pipeline("automatic-speech-recognition", model=str(transformers_dir(model)), device="cpu",
                    model_kwargs=kwargs)
    if pipe.tokenizer.pad_token is None:  # batching needs one; the pipeline's own error says to use EOS
        pipe.tokenizer.pad_token = pipe.tokenizer.eos_token
    return pipe


def pipeline_kwargs(model: str, language: str) -> dict:
    """What the handler passes for the same request: greedy, and language/task on multilingual models."""
    kwargs = {"num_beams": 1, "do_sample": False}
    if not model.endswith(".en"):
        kwargs.update(language=language, task="transcribe")
    return kwargs
