"""Find a model's files: an embedded name, a local directory, or a Hugging Face Hub repository.

Every model setting accepts all three. Hub repositories are fetched with huggingface_hub into its
usual cache (so ``HF_HUB_OFFLINE=1`` serves them from there); only the files the detected format
needs are downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights import embedded

Format = Literal["ctranslate2", "transformers"]

_PATTERNS: dict[str, list[str]] = {
    "ctranslate2": ["config.json", "model.bin", "tokenizer.json", "vocabulary.*", "preprocessor_config.json"],
    "transformers": ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"],
}


@dataclass(frozen=True)
class ModelSource:
    reference: str  # what the settings said
    path: Path  # local directory holding the files
    format: Format


def detect_format(directory: Path) -> Format | None:
    """CTranslate2 directories hold model.bin and a config without model_type; transformers the reverse."""
    config_path = directory / "config.json"
    if not config_path.is_file():
        return None
    try:
        config = json.loads(config_path.read_text())
    except (OSError, ValueError):
        return None
    if "model_type" in config:
        return "transformers"
    if (directory / "model.bin").is_file():
        return "ctranslate2"
    return None


def locate_model(reference: str, *, cache_dir: Path, token: str | None = None) -> ModelSource:
    if embedded.is_embedded(reference):
        path = embedded.assemble(embedded.lookup(reference), cache_dir)
        return ModelSource(reference, path, "ctranslate2")
    local = Path(reference).expanduser()
    if local.is_dir():
        return ModelSource(reference, local, _required_format(local, reference))
    if reference.startswith((".", "/", "~")) or reference.count("/") > 1:
        raise ModelLoadError(f"model directory {reference!r} does not exist")
    return _from_hub(reference, token)


def _required_format(directory: Path, reference: str) -> Format:
    found = detect_format(directory)
    if found is None:
        raise ModelLoadError(
            f"{reference!r} is neither a CTranslate2 model (config.json + model.bin) nor a "
            "transformers model (config.json with model_type + weights)"
        )
    return found


def _from_hub(repo_id: str, token: str | None) -> ModelSource:
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError

    try:
        config_file = Path(hf_hub_download(repo_id, "config.json", token=token))
        found = _format_from_config(config_file, repo_id)
        path = Path(snapshot_download(repo_id, allow_patterns=_PATTERNS[found], token=token))
    except LocalEntryNotFoundError as exc:
        raise ModelLoadError(
            f"model {repo_id!r} is not in the local Hugging Face cache and the Hub cannot be "
            "reached (HF_HUB_OFFLINE is set or there is no network)"
        ) from exc
    except RepositoryNotFoundError as exc:
        raise ModelLoadError(
            f"model {repo_id!r} was not found on the Hub (or is gated/private: set HF_TOKEN)"
        ) from exc
    except (HfHubHTTPError, ValueError) as exc:
        raise ModelLoadError(f"model {repo_id!r} could not be fetched: {type(exc).__name__}") from exc
    return ModelSource(repo_id, path, found)


def _format_from_config(config_file: Path, repo_id: str) -> Format:
    try:
        config = json.loads(config_file.read_text())
    except ValueError as exc:
        raise ModelLoadError(f"{repo_id!r}: config.json is not valid JSON") from exc
    # CTranslate2 Whisper configs carry alignment_heads/lang_ids but no model_type.
    return "transformers" if "model_type" in config else "ctranslate2"
