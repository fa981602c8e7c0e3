"""What differs between the transformers versions requirements-runtime.txt allows (4.53 to 5.x).

The floor is tested by scripts/check_lowest.sh, which runs the transformers backend's tests on it.
"""

from __future__ import annotations

import logging

import transformers
from packaging.version import Version

_INSTALLED = Version(transformers.__version__)
# from_pretrained's dtype keyword: ``dtype`` from 4.56 on, ``torch_dtype`` before, where an unknown
# ``dtype`` is stored in the model config, which then fails to serialise (a torch.dtype is not JSON).
_DTYPE_KEYWORD = "dtype" if _INSTALLED >= Version("4.56") else "torch_dtype"


def dtype_argument(dtype) -> dict:
    """``{keyword: dtype}`` for ``from_pretrained`` on the installed transformers."""
    return {_DTYPE_KEYWORD: dtype}


def set_attention(model, implementation: str) -> None:
    """Switch a loaded model between ``sdpa`` and ``eager`` attention.

    ``set_attn_implementation`` is there in 4.55 and later, not in 4.53. Without it the config's
    value is read at each forward pass (Whisper's attention layers look it up there), so setting the
    config is the whole switch.
    """
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(implementation)
    else:
        model.config._attn_implementation = implementation


def save_tokenizer_files(directory, feature_extractor, tokenizer) -> None:
    """Write the tokenizer's and feature extractor's files for a converted model.

    transformers 5 saves them through ``WhisperProcessor`` (adding processor_config.json); 4's
    ``WhisperProcessor`` takes the slow tokenizer only, which needs vocab.json and merges.txt that a
    tokenizer.json alone does not give, so there each is saved on its own.
    """
    if _INSTALLED.major >= 5:
        from transformers import WhisperProcessor

        WhisperProcessor(feature_extractor=feature_extractor, tokenizer=tokenizer).save_pretrained(directory)
    else:
        feature_extractor.save_pretrained(directory)
        tokenizer.save_pretrained(directory)


def skip_unloadable_torchcodec() -> None:
    """Keep transformers' speech pipeline away from a torchcodec that cannot load.

    transformers 4.55 to 4.57 import torchcodec on every pipeline call whenever it is installed, to
    check for its decoder type, and that import fails without FFmpeg's shared libraries. pyannote.audio
    installs torchcodec, but this backend hands the pipeline waveforms only: where torchcodec cannot
    load, the pipeline is told it is absent (transformers 5 checks this itself).
    """
    from transformers.pipelines import automatic_speech_recognition as asr_pipeline

    available = getattr(asr_pipeline, "is_torchcodec_available", None)  # not imported there by 5.x
    if available is None or not available():
        return
    try:
        import torchcodec.decoders  # noqa: F401
    except Exception:  # OSError or RuntimeError, depending on the torchcodec release
        asr_pipeline.is_torchcodec_available = lambda: False


class _WhisperLengthNotice(logging.Filter):
    """Whisper's ``generate`` sets ``max_length`` itself, so transformers warns on every call that is given
    ``max_new_tokens`` that both were set (a token cap: asr/transformers/windowed.py). The cap is ours and
    takes precedence, as the notice says: it is dropped, every other warning kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Both `max_new_tokens`")


def quiet_length_notice() -> None:
    """Drop transformers' "both max_new_tokens and max_length" notice (once per process)."""
    logger = logging.getLogger("transformers.generation.utils")
    if not any(isinstance(f, _WhisperLengthNotice) for f in logger.filters):
        logger.addFilter(_WhisperLengthNotice())
