"""The project as a package: a wheel that works from anywhere, root entry points that keep their names,
import layers checked by import-linter, and no hand-made import paths."""

from __future__ import annotations

import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import ROOT

BIN = Path(sys.executable).parent
COMMANDS = ("transcribe", "serve", "batch", "scale", "models")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A non-editable install into a fresh venv layered over this environment (nothing downloads)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy: building leaves build/ and *.egg-info behind
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "results", "docs", "tests", "bench", "build", "*.egg-info"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    (venv_site := next(venv.glob("lib/python*/site-packages"))).joinpath("parent.pth").write_text(
        "\n".join(site.getsitepackages()) + "\n")
    build = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(source)],
        cwd=work, capture_output=True, text=True, timeout=120,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    assert (venv_site / "whisper_endpoint" / "handler.py").is_file()
    # The web page's files are package data: every one of them is installed.
    data = ROOT / "whisper_endpoint" / "static"
    assert {str(p.relative_to(data)) for p in data.rglob("*.*")} == {
        str(p.relative_to(venv_site / "whisper_endpoint" / "static"))
        for p in (venv_site / "whisper_endpoint" / "static").rglob("*.*")}
    return venv


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})


def test_the_wheel_works_from_another_directory(installed, tmp_path):
    top = _run(installed, installed / "bin" / "whisper-endpoint", "--help", cwd=tmp_path)
    assert top.returncode == 0 and all(command in top.stdout for command in COMMANDS), top.stderr
    for command in COMMANDS:
        shown = _run(installed, installed / "bin" / "whisper-endpoint", command, "--help", cwd=tmp_path)
        assert shown.returncode == 0 and f"usage: whisper-endpoint {command}" in shown.stdout, shown.stderr[-2000:]
    imported = _run(installed, installed / "bin" / "python", "-c",
                    "import whisper_endpoint.serving, whisper_endpoint as p; print(p.__file__)", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert imported.stdout.strip().startswith(str(installed))  # the installed copy, not the repository
    # The wheel holds the package only: no generic top-level modules such as config or server.
    for name in ("handler", "config", "server", "inference", "diarization_utils"):
        missing = _run(installed, installed / "bin" / "python", "-c", f"import {name}", cwd=tmp_path)
        assert "ModuleNotFoundError" in missing.stderr, name


def test_root_entry_points_keep_their_names():
    """What Inference Endpoints and SageMaker's code/ import from the repository root, uninstalled."""
    code = ("from handler import EndpointHandler; from config import ModelSettings, InferenceConfig; "
            "import diarization_utils, inference, server; "
            "assert callable(inference.model_fn) and server.app.title and diarization_utils.load_diarizer")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_import_layers_hold():
    done = subprocess.run([BIN / "lint-imports"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


def test_no_hand_made_import_paths():
    pattern = re.compile(r"sys\.path")
    found = [f"{path.relative_to(ROOT)}:{number}"
             for folder in ("whisper_endpoint", "tests", "bench", "scripts")
             for path in (ROOT / folder).rglob("*.py")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line)]
    assert found == []
