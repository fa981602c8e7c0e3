"""The assistant of speculative decoding: a decoder-only or a smaller full Whisper, checked to speak the
main model's tokens."""

from __future__ import annotations

import logging
from pathlib import Path

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights.transformers_compat import dtype_argument

logger = logging.getLogger(__name__)


def load_assistant(path: Path, name: str, main):
    """Load a decoder-only or full-Whisper assistant and check it speaks the main model's tokens."""
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        WhisperForConditionalGeneration,
    )

    config = AutoConfig.from_pretrained(path)
    decoder_only = any("CausalLM" in arch for arch in (config.architectures or []))
    cls = AutoModelForCausalLM if decoder_only else WhisperForConditionalGeneration
    _check_same_tokenizer(path, name, config, main)
    assistant = cls.from_pretrained(
        path, attn_implementation=main.attention, low_cpu_mem_usage=True, **dtype_argument(main.dtype)
    )
    if decoder_only and config.d_model != main.model.config.d_model:
        raise ModelLoadError(
            f"assistant {name!r} is decoder-only with d_model {config.d_model}; it reuses the main encoder, "
            f"whose d_model is {main.model.config.d_model}"
        )
    # "heuristic" writes the draft length back onto the assistant after each call, so one request would
    # shape the next (or a concurrent) one; "heuristic_transient" adapts it the same way within a call.
    if assistant.generation_config.num_assistant_tokens_schedule == "heuristic":
        assistant.generation_config.num_assistant_tokens_schedule = "heuristic_transient"
    logger.info("assistant %s loaded (%s)", name, "decoder-only" if decoder_only else "full Whisper")
    return assistant.to(main.device).eval()


def _check_same_tokenizer(path: Path, name: str, config, main) -> None:
    from transformers import AutoTokenizer

    main_vocab = main.tokenizer.get_vocab()
    if config.vocab_size != main.model.config.vocab_size:
        raise ModelLoadError(
            f"assistant {name!r} has vocabulary size {config.vocab_size}, the main model "
            f"{main.model_name!r} {main.model.config.vocab_size}: speculative decoding needs the same tokenizer "
            "(e.g. an English-only assistant cannot assist a multilingual model)"
        )
    try:
        vocab = AutoTokenizer.from_pretrained(path).get_vocab()
    except (OSError, ValueError):
        return  # no tokenizer files beside the weights: the vocabulary size check above stands
    if vocab != main_vocab:
        raise ModelLoadError(f"assistant {name!r} uses a different tokenizer from {main.model_name!r}")
