"""Model resolution: embedded packages, local directories and the Hub loading path, all offline."""

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from support.audio import clip_refs
from support.paths import CLIPS, ROOT
from whisper_endpoint.asr import asr_reference
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights import embedded
from whisper_endpoint.weights.locate import detect_format, locate_model

TINY = embedded.MODELS["tiny.en"]


def test_assembly_joins_parts_checks_sha256_and_is_reused(tmp_path):
    target = embedded.assemble(embedded.MODELS["base"], tmp_path)
    assert (target / "model.bin").stat().st_size == 94371840 + 50845767
    assert detect_format(target) == "ctranslate2" and (target / "tokenizer.json").is_file()
    mtime = (target / "model.bin").stat().st_mtime_ns
    assert embedded.assemble(embedded.MODELS["base"], tmp_path) == target
    assert (target / "model.bin").stat().st_mtime_ns == mtime  # built once
    assert sorted(p.name for p in target.parent.iterdir()) == ["base"]  # no staging left behind


def test_checksum_mismatch_leaves_nothing_half_built(tmp_path):
    corrupt = replace(TINY, sha256="0" * 64)
    with pytest.raises(ModelLoadError, match="expected 0000"):
        embedded.assemble(corrupt, tmp_path)
    assert list((tmp_path / "embedded").iterdir()) == []


def test_missing_weight_package_says_what_to_install(tmp_path):
    missing = replace(TINY, parts=(("no_such_weight_package", "model.bin"),), packages=("no-such-weight-package",))
    with pytest.raises(ModelLoadError, match="pip install no-such-weight-package"):
        embedded.assemble(missing, tmp_path)


def test_unknown_embedded_name_lists_the_available_ones(tmp_path):
    with pytest.raises(ModelLoadError, match="available: embedded:tiny.en, embedded:base"):
        locate_model("embedded:huge", cache_dir=tmp_path)


def test_local_directory_and_missing_directory(tmp_path):
    source = locate_model(str(embedded.assemble(TINY, tmp_path)), cache_dir=tmp_path)
    assert source.format == "ctranslate2"
    with pytest.raises(ModelLoadError, match="does not exist"):
        locate_model(str(tmp_path / "nowhere"), cache_dir=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="neither a CTranslate2 model"):
        locate_model(str(tmp_path / "empty"), cache_dir=tmp_path)


def test_hub_id_not_in_cache_while_offline(tmp_path, monkeypatch):
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache"):
        locate_model("someone/whisper-nothing", cache_dir=tmp_path)


def test_repository_path_is_used_when_asr_model_is_unset(settings_factory, tmp_path):
    model_dir = embedded.assemble(TINY, tmp_path)
    assert asr_reference(settings_factory(), str(model_dir)) == str(model_dir)
    assert asr_reference(settings_factory(), str(ROOT)) == "embedded:base"  # the repo itself holds no model
    assert asr_reference(settings_factory(asr_model="embedded:tiny.en"), str(model_dir)) == "embedded:tiny.en"


def _fake_hub_cache(cache: Path, repo_id: str, files: Path) -> None:
    """The layout huggingface_hub writes after a download: blobs addressed by refs/main."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(files, repo / "snapshots" / commit)


def test_hub_loading_path_end_to_end_from_a_populated_cache(tmp_path):
    # The same code a deployment runs against the Hub, fed from a cache laid out as after a download.
    _fake_hub_cache(tmp_path / "hub", "acme/whisper-tiny.en-ct2", embedded.assemble(TINY, tmp_path / "models"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"),
           "ASR_MODEL": "acme/whisper-tiny.en-ct2", "MODEL_CACHE_DIR": str(tmp_path / "models")}
    clip = CLIPS / "asterisk_vm-next.flac"
    out = subprocess.run([sys.executable, "-m", "whisper_endpoint", str(clip)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert clip_refs()["asterisk_vm-next.flac"].rstrip(".") in out.stdout
