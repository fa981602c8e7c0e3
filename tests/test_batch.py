"""The batch command: 20 short files (one corrupt) in nested folders, results mirrored under an output
folder, the failure recorded, a rerun (the real command, in a subprocess) that does no work.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jiwer
import pytest

from support.paths import CLIPS, ROOT
from support.audio import clip_refs
from whisper_endpoint.batch import InputError, collect, run_batch
from whisper_endpoint.batch.outputs import write_atomic

CORRUPT = "two/corrupt.flac"


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


@pytest.fixture(scope="module")
def audio_tree(tmp_path_factory) -> Path:
    """19 real clips under one/ and two/ (one name in both, to show results never clash) + one corrupt."""
    root = tmp_path_factory.mktemp("inputs")
    refs = clip_refs()
    names = sorted(refs, key=lambda name: (len(refs[name]), name))[:18]  # the shortest prompts: fewer tokens
    for index, name in enumerate(names):
        folder = root / ("one" if index % 2 else "two")
        folder.mkdir(exist_ok=True)
        shutil.copy(CLIPS / name, folder / name)
    shutil.copy(CLIPS / names[0], root / "one" / names[0])  # the same file name in both folders
    (root / CORRUPT).write_bytes(b"fLaC" + os.urandom(4000))  # a FLAC header, then noise
    (root / "one" / "notes.txt").write_text("not audio: a folder search leaves it out")
    return root


@pytest.fixture(scope="module")
def first_run(audio_tree, tmp_path_factory, tiny_handler):
    out = tmp_path_factory.mktemp("results")
    items = collect([str(audio_tree)])
    summary = run_batch(items, out, tiny_handler, formats=["json", "srt", "vtt"], progress=False)
    return items, out, summary


@pytest.fixture(scope="module")
def twin_run(tmp_path_factory, tiny_handler):
    """``first_run`` cut to what names and retries need: one clip under one/ and two/, and the corrupt file."""
    root, out = tmp_path_factory.mktemp("twins"), tmp_path_factory.mktemp("twin-results")
    refs = clip_refs()
    name = min(refs, key=lambda name: (len(refs[name]), name))
    for folder in ("one", "two"):
        (root / folder).mkdir()
        shutil.copy(CLIPS / name, root / folder / name)
    (root / CORRUPT).write_bytes(b"fLaC" + os.urandom(4000))
    items = collect([str(root)])
    return items, out, run_batch(items, out, tiny_handler, formats=["json"], progress=False)


@pytest.mark.slow  # twenty files
def test_twenty_files_give_nineteen_results_and_one_recorded_failure(first_run, audio_tree):
    items, out, summary = first_run
    assert len(items) == 20
    assert (summary.done, summary.failed, summary.skipped) == (19, 1, 0)
    refs = clip_refs()
    for item in items:
        if item.relative == CORRUPT:
            continue
        result = json.loads((out / f"{item.relative}.json").read_text())
        assert result["text"].strip(), item.relative
        # tiny.en gets these prompts nearly right (3% WER): each result belongs to its own file
        assert jiwer.wer(_words(refs[Path(item.relative).name]), _words(result["text"])) < 0.5, item.relative
        assert (out / f"{item.relative}.srt").read_text().startswith("1\n00:00:")
        assert (out / f"{item.relative}.vtt").read_text().startswith("WEBVTT\n")
    error = json.loads((out / f"{CORRUPT}.error.json").read_text())
    assert (error["status"], error["code"]) == (415, "undecodable_audio")
    assert error["file"] == str(audio_tree / CORRUPT)
    assert not (out / f"{CORRUPT}.json").exists()
    assert summary.failures == [{"file": CORRUPT, "error": error["error"]}]
    # The speed is the wall time over the audio that was transcribed: the 19 results' own durations.
    audio_s = sum(json.loads((out / f"{item.relative}.json").read_text())["duration"]
                  for item in items if item.relative != CORRUPT)
    assert summary.audio_s == pytest.approx(audio_s, abs=1e-3) and summary.wall_s > 0
    assert summary.real_time_factor == pytest.approx(summary.wall_s / audio_s, rel=1e-4)
    assert not list(out.rglob("*.tmp")), "temporary files left behind"


def test_equal_file_names_in_different_folders_do_not_clash(twin_run):
    items, out, summary = twin_run
    assert (summary.done, summary.failed) == (2, 1)
    relatives = [item.relative for item in items]
    assert len(set(relatives)) == len(relatives) == 3
    names = [Path(rel).name for rel in relatives]
    twins = [rel for rel in relatives if names.count(Path(rel).name) == 2]
    assert sorted(Path(rel).parent.name for rel in twins) == ["one", "two"]
    assert all((out / f"{rel}.json").is_file() for rel in twins)


def test_rerun_of_the_command_does_no_work(first_run, audio_tree, tmp_path):
    items, out, _ = first_run
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    summary_file = tmp_path / "summary.json"
    env = {**os.environ, "ASR_MODEL": "embedded:tiny.en", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "whisper_endpoint.batch", str(audio_tree), "--out", str(out), "--format", "srt,vtt",
         "--no-progress", "--summary-json", str(summary_file)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(summary_file.read_text())
    assert (summary["done"], summary["failed"], summary["skipped"]) == (0, 0, 20)
    assert "0 done, 0 failed, 20 skipped of 20 files" in run.stdout
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


def test_retry_failed_tries_the_failed_file_again(twin_run, tiny_handler):
    items, out, _ = twin_run
    error_file = out / f"{CORRUPT}.error.json"
    os.utime(error_file, ns=(0, 0))
    summary = run_batch(items, out, tiny_handler, progress=False, retry_failed=True)
    assert (summary.done, summary.failed, summary.skipped) == (0, 1, 2)
    assert error_file.stat().st_mtime_ns > 0  # recorded anew


def test_a_glob_and_a_manifest_mirror_their_own_relative_paths(audio_tree, tmp_path):
    from_glob = collect([str(audio_tree / "one" / "*.flac")])
    assert from_glob and all("/" not in item.relative for item in from_glob)
    manifest = tmp_path / "list.txt"
    lines = [str(audio_tree / "one" / from_glob[0].relative), "# a comment", "", f"../{tmp_path.name}/missing.flac"]
    manifest.write_text("\n".join(lines) + "\n")
    listed = collect([], [str(manifest)])
    expected = {str(audio_tree / "one" / from_glob[0].relative), str(tmp_path / "missing.flac")}
    assert {item.path for item in listed} == expected
    both = collect([str(audio_tree / "one"), str(audio_tree / "two")])
    assert {item.relative.split("/")[0] for item in both} == {"one", "two"}


def test_a_missing_input_file_is_a_recorded_failure(tmp_path, tiny_handler):
    manifest = tmp_path / "list.txt"
    manifest.write_text("gone.flac\n")
    summary = run_batch(collect([], [str(manifest)]), tmp_path / "out", tiny_handler, progress=False)
    assert (summary.done, summary.failed) == (0, 1)
    assert "gone.flac" in json.loads((tmp_path / "out" / "gone.flac.error.json").read_text())["error"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["nowhere/"], "no such file or folder"),
        (["nothing-*.flac"], "matches no files"),
        ([str(CLIPS), "--format", "srt,docx"], "unknown output format"),
        ([str(CLIPS), "--format", "rttm"], "DIARIZATION_MODEL"),
    ],
)
def test_bad_usage_names_the_problem(args, message, tmp_path, capsys, monkeypatch):
    from whisper_endpoint.batch.__main__ import main

    monkeypatch.delenv("DIARIZATION_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_atomic_write_replaces_whole_files(tmp_path):
    target = tmp_path / "deep" / "x.json"
    write_atomic(target, "first")
    write_atomic(target, "second")
    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["x.json"]


def test_no_inputs_at_all():
    with pytest.raises(InputError, match="no input files"):
        collect([])
