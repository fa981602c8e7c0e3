"""ASR backends and the one function that picks and loads the configured one."""

from __future__ import annotations

import logging
from pathlib import Path

from whisper_endpoint.asr.base import ASRBackend, EngineSetup
from whisper_endpoint.core.device import (
    ctranslate2_compute_type,
    max_batch_size,
    resolve_device,
)
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights.locate import locate_model
from whisper_endpoint.weights.repository import carried_asr_model

logger = logging.getLogger(__name__)

__all__ = ["ASRBackend", "load_asr_backend", "asr_reference"]


def asr_reference(settings, repository_path: str = "") -> str:
    """ASR_MODEL when set; else a model the endpoint's repository carries; else the embedded default."""
    if "asr_model" in settings.model_fields_set:
        return settings.asr_model
    carried = carried_asr_model(repository_path) if repository_path else None
    return str(carried) if carried is not None else settings.asr_model


def load_asr_backend(settings, repository_path: str = "", voices=None) -> ASRBackend:
    """``voices``: groups spans of speech by speaker, for the language per span (both backends)."""
    reference = asr_reference(settings, repository_path)
    token = settings.hf_token.get_secret_value() if settings.hf_token else None
    source = locate_model(reference, cache_dir=settings.model_cache_dir, token=token)
    kind = settings.asr_backend
    if kind == "auto":  # speculative decoding exists on the transformers backend only
        kind = "transformers" if settings.assistant_model else source.format
    device = resolve_device(settings.device)
    if settings.assistant_model and kind != "transformers":
        raise ModelLoadError(
            "ASSISTANT_MODEL needs the transformers backend (speculative decoding); "
            f"{reference!r} resolved to {kind}: set ASR_BACKEND=transformers"
        )
    logger.info("ASR model %s (%s format) on the %s backend", reference, source.format, kind)
    if kind == "ctranslate2":
        if source.format != "ctranslate2":
            raise ModelLoadError(
                f"{reference!r} is a transformers model; the ctranslate2 backend needs a CTranslate2 "
                "conversion (ct2-transformers-converter) or ASR_BACKEND=transformers"
            )
        from whisper_endpoint.asr.ctranslate2.ctranslate2_backend import (
            CTranslate2Backend,
        )

        return CTranslate2Backend(str(source.path), EngineSetup(
            model_name=reference,
            device=device,
            max_batch_size=max_batch_size(settings.max_batch_size, device),
            compute_type=ctranslate2_compute_type(settings.compute_type, device),
            cpu_threads=settings.cpu_threads,
            num_workers=settings.num_workers,
        ), voices=voices)
    from whisper_endpoint.asr.transformers.transformers_backend import (
        TransformersBackend,
    )

    assistant = None
    if settings.assistant_model:
        assistant = _transformers_dir(
            locate_model(settings.assistant_model, cache_dir=settings.model_cache_dir, token=token), settings
        )
    return TransformersBackend(_transformers_dir(source, settings), EngineSetup(
        model_name=reference,
        device=device,
        max_batch_size=max_batch_size(settings.max_batch_size, device),
    ), assistant=None if assistant is None else (assistant, settings.assistant_model), voices=voices)


def _transformers_dir(source, settings) -> Path:
    """CTranslate2 weights (the embedded models) are converted once into the model cache."""
    if source.format == "transformers":
        return source.path
    from whisper_endpoint.weights.convert import converted_model_dir

    return converted_model_dir(source.path, settings.model_cache_dir)
