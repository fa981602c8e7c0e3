"""Settings and per-request options, kept importable from the repository root as in the reference
handler (``from config import ModelSettings, InferenceConfig``). Defined in whisper_endpoint/core/config.py.
"""

from whisper_endpoint.core.config import DEFAULT_ASR_MODEL, InferenceConfig, ModelSettings

__all__ = ["DEFAULT_ASR_MODEL", "InferenceConfig", "ModelSettings"]
