"""Pick the device, numeric precision and batch limit when the settings say "auto" or nothing."""

from __future__ import annotations

from whisper_endpoint.core.errors import ModelLoadError


def cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # a CTranslate2-only install
        import ctranslate2

        return ctranslate2.get_cuda_device_count() > 0


def resolve_device(setting: str) -> str:
    if setting == "auto":
        return "cuda" if cuda_available() else "cpu"
    if setting == "cuda" and not cuda_available():
        raise ModelLoadError("DEVICE=cuda was set but no CUDA device is visible")
    return setting


def ctranslate2_compute_type(setting: str, device: str) -> str:
    """int8 on CPU (fastest there), float16 on CUDA; an explicit choice must be supported."""
    import ctranslate2

    supported = ctranslate2.get_supported_compute_types(device)
    if setting == "auto":
        preferred = ("float16", "int8_float16") if device == "cuda" else ("int8", "int8_float32")
        return next((kind for kind in preferred if kind in supported), "float32")
    if setting not in supported:
        raise ModelLoadError(
            f"COMPUTE_TYPE={setting} is not supported on {device} by CTranslate2 "
            f"(supported: {', '.join(sorted(supported))})"
        )
    return setting


# Windows encoded at once when MAX_BATCH_SIZE is unset. Memory grows with each: 91 MiB of encoder
# activations per window for embedded:base on CPU (int8), more for larger models (bench item
# request_cost, results/benchmarks.json); CPU time is flat from batch 4 to 24 (docs/benchmarks.md), so a
# CPU gains nothing from more.
DEFAULT_MAX_BATCH_SIZE = {"cpu": 8, "cuda": 24}


def max_batch_size(setting: int | None, device: str) -> int:
    return setting or DEFAULT_MAX_BATCH_SIZE[device]
