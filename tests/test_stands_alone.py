"""The repository stands alone: a clone with nothing beside it runs, tests and benchmarks.

Nothing in the code, tests, benchmarks or scripts may name a folder outside the repository; the one
exception is the optional platform simulation's default for the inference toolkit's source (its
location is a setting, TOOLKIT_DIR, and the script says where to get it when it is missing).
"""

import re
import subprocess

from support.paths import AUDIO, ROOT

CHECKED = ("whisper_endpoint", "tests", "bench", "scripts", "run.sh", "test.sh")
OUTSIDE = re.compile(
    r"\.\./shared"  # the development machines' folder beside the clone
    r"|parents?\[\d\]\s*/\s*[\"']shared[\"']|\.parent\s*/\s*[\"']shared[\"']"  # the same, built with pathlib
    r"|SHARED_AUDIO"  # the old setting that pointed the tests there
)
BESIDE = ".." + "/shared"  # spelled in two pieces, so that this file does not name the folder itself
ALLOWED = {("scripts/simulate_endpoint.sh", 'TOOLKIT="${TOOLKIT_DIR:-$ROOT/' + BESIDE + '/hf-inference-toolkit}"')}


def outside_references(root=ROOT) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *CHECKED],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split()
    hits = []
    for name in listed:
        path = root / name
        if name == "tests/test_stands_alone.py" or not path.is_file():
            continue
        try:
            lines = path.read_text().splitlines()
        except UnicodeDecodeError:
            continue  # binary data (audio, images)
        for number, line in enumerate(lines, 1):
            if OUTSIDE.search(line) and (name, line.strip()) not in ALLOWED:
                hits.append(f"{name}:{number}: {line.strip()}")
    return hits


def test_nothing_reads_outside_the_repository():
    assert outside_references() == []


def test_the_check_finds_a_planted_reference(tmp_path):
    """The scan itself works: a planted path outside the repository is reported, the allowed line is not."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "simulate_endpoint.sh").write_text(next(iter(ALLOWED))[1] + "\n")
    (tmp_path / "scripts" / "planted.py").write_text('AUDIO = ROOT.parent / "shared" / "audio"\n')
    (tmp_path / "run.sh").write_text(f"set -- {BESIDE}/audio/clips/x.flac\n")
    assert outside_references(tmp_path) == [
        f"run.sh:1: set -- {BESIDE}/audio/clips/x.flac",
        'scripts/planted.py:1: AUDIO = ROOT.parent / "shared" / "audio"',
    ]


def test_run_sh_default_file_is_in_the_repository():
    default = re.search(r"set -- (\S+\.flac)", (ROOT / "run.sh").read_text()).group(1)
    assert (ROOT / default).is_file() and (ROOT / default).resolve().is_relative_to(AUDIO)


def test_the_audio_and_its_ground_truth_are_committed():
    """Every file the tests, benchmarks and evaluations read is tracked, with its ground truth beside it."""
    tracked = set(subprocess.run(
        ["git", "ls-files", "audio"], cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split())
    assert "audio/clips/refs.json" in tracked and len([n for n in tracked if n.startswith("audio/clips/")]) == 31
    for stem in ("dialogues/fillets_barrel", "dialogues/fillets_cave", "dialogues/flite_meeting",
                 "ja/kokoro_ja_meeting", "long/fillets_long"):
        for suffix in (".flac", ".rttm", ".json"):
            assert f"audio/{stem}{suffix}" in tracked
    # A clone stays a quick download: the evaluation sets (alike voices, mixed languages, loop stress, word
    # times) are rebuilt by audio/generate/ but committed so that every figure can be re-run offline. 80 MiB
    # until the short alike-voice sets (29 files, 11.7 MB) came; 96 MiB leaves room for one more set.
    size = sum((ROOT / name).stat().st_size for name in tracked)
    assert size < 96 * 2**20, f"committed audio is {size / 2**20:.1f} MiB (the bound is 96 MiB)"
    largest = max(tracked, key=lambda name: (ROOT / name).stat().st_size)
    assert (ROOT / largest).stat().st_size < 12 * 2**20, f"{largest} is over 12 MiB"
