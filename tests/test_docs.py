"""The documentation stays true: generated parts are current, links resolve, no tracker numbers or commit
hashes in user pages, the code paths that pages and docstrings cite exist (support/cited_paths.py), and
the figures it quotes come from results files that exist, say what made them, and are all cited.

Generated parts (scripts/generate_docs.py): the parameter and settings tables from the pydantic
schemas, the benchmark results block and plot from results/benchmarks.json. Nothing is measured here:
the check only regenerates from the schemas and the results file (the plot by the digest it carries).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import cited_paths, links

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = cited_paths.USER_DOCS
PAGES = ["README.md", "docs/*.md", "docs/notes/*.md"]  # where figures are quoted
RESULTS_NAME = re.compile(r"results/((?:archive/)?[a-z0-9_][\w.-]*\.json)")


def cited_results(pages=PAGES, root: Path = ROOT) -> dict[str, list[str]]:
    """results/NAME.json (or results/archive/NAME.json) -> the pages that cite it."""
    cited: dict[str, list[str]] = {}
    for glob in pages:
        for page in sorted(root.glob(glob)):
            for name in RESULTS_NAME.findall(page.read_text(encoding="utf-8")):
                cited.setdefault(name, []).append(str(page.relative_to(root)))
    return cited


def results_problems(root: Path = ROOT) -> list[str]:
    """Every current results file cited by a page and carrying its provenance; every citation a file."""
    cited = cited_results(root=root)
    files = {path.name for path in (root / "results").glob("*.json")}
    problems = [f"results/{name} is cited by no page" for name in sorted(files - set(cited))]
    problems += [f"{', '.join(sorted(set(pages)))} cite(s) results/{name}, which does not exist"
                 for name, pages in sorted(cited.items()) if not (root / "results" / name).is_file()]
    for name in sorted(files):
        made = json.loads((root / "results" / name).read_text(encoding="utf-8")).get("produced_by", {})
        if not (made.get("commit") and made.get("command")):
            problems.append(f"results/{name} does not say what made it (produced_by.command and .commit)")
    return problems


def test_generated_docs_are_current():
    check = subprocess.run([sys.executable, "-m", "scripts.generate_docs", "--check"], cwd=ROOT, capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr


def test_every_relative_link_and_anchor_resolves():
    pages = links.pages()
    assert {"README.md", "CHANGELOG.md", "docs/index.md"} <= {str(page.relative_to(ROOT)) for page in pages}
    assert [problem for page in pages for problem in links.broken(page)] == []


def test_the_link_check_sees_a_broken_file_and_a_broken_anchor(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## Settings (`ServerSettings`, environment)\n")
    page = tmp_path / "README.md"
    page.write_text("# Top\n\n[ok](docs/other.md#settings-serversettings-environment) [self](#top)\n"
                    "[gone](docs/missing.md) [bad anchor](docs/other.md#settings) `[in code](nowhere.md)`\n"
                    "```\n[in a block](nowhere.md)\n```\n[web](https://example.com/x.md)\n")
    problems = links.broken(page, root=tmp_path)
    assert problems == ["README.md: docs/missing.md (no such file)",
                        "README.md: docs/other.md#settings (no heading with that anchor in docs/other.md)"]


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Settings (`ServerSettings`, environment variables)", "settings-serversettings-environment-variables"),
    ("Floors (`scripts/check_lowest.sh`, not in CI)", "floors-scriptscheck_lowestsh-not-in-ci"),
    ("Requests at once: what is safe and what it costs", "requests-at-once-what-is-safe-and-what-it-costs"),
])
def test_anchors_follow_github(heading, anchor):
    assert links.slug(heading) == anchor


def test_user_docs_name_no_tracker_numbers():
    """Readers have no access to the tracker: say what a change was, not its number."""
    assert _user_doc_lines(re.compile(r"\bissues?\s*#?\d+|(?<![\w&/])#\d+\b|_issue\d+", re.IGNORECASE)) == []


def test_user_docs_name_no_commits():
    """A page says what is true now; which commit did what is history, kept in docs/notes/. The pattern
    also takes a number of seven digits or more: group its digits (1,073,741,824) or round it."""
    assert _user_doc_lines(re.compile(r"\b[0-9a-f]{7,40}\b")) == []


def _user_doc_lines(pattern: re.Pattern) -> list[str]:
    """'page:line: text' for each line of the user docs that ``pattern`` finds something in."""
    return [f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}"
            for glob in USER_DOCS for path in sorted(ROOT.glob(glob))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


def test_every_results_file_is_cited_says_what_made_it_and_every_citation_exists():
    assert results_problems() == []


def test_the_results_check_sees_an_uncited_file_a_missing_one_and_one_without_provenance(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "results").mkdir()
    made = {"produced_by": {"command": "python -m evaluation asr", "commit": "abc"}}
    (tmp_path / "results" / "cited.json").write_text(json.dumps(made))
    (tmp_path / "results" / "orphan.json").write_text(json.dumps(made))
    (tmp_path / "results" / "bare.json").write_text("{}")
    (tmp_path / "README.md").write_text("See results/cited.json, results/bare.json and results/gone.json.")
    assert results_problems(tmp_path) == [
        "results/orphan.json is cited by no page",
        "README.md cite(s) results/gone.json, which does not exist",
        "results/bare.json does not say what made it (produced_by.command and .commit)",
    ]


def test_every_code_path_the_docs_and_docstrings_cite_exists():
    assert cited_paths.problems() == []


def test_the_path_check_sees_a_dead_path_in_a_page_a_docstring_and_a_comment(tmp_path):
    for folder in ("whisper_endpoint/asr/", "scripts", "docs", "audio/clips", "results"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "whisper_endpoint/asr/speech.py").write_text('"""The VAD (see asr/gone.py)."""\n')
    (tmp_path / "audio/clips/a.flac").write_bytes(b"")
    (tmp_path / "scripts/tool.py").write_text(
        '"""Reads scripts/tool.py and bench/missing.py."""\n'
        "# support/gone.py, results/NAME.json\n"
        'TEXT = "scripts/not_a_docstring.py"\n')
    (tmp_path / "docs/page.md").write_text(
        "`asr/speech.py`, whisper_endpoint/asr/speech.py, [back](../scripts/tool.py), "
        "`audio/clips`, `clips/a`, `audio/gone` and whisper_endpoint/asr/gone.py.\n"
        "12 jobs/min, srt/vtt, audio/wav, SageMaker's code/inference.py, results/*.json, docs/NAME.md.\n"
        "```bash\npython -m x --out scripts/out\n```\n")
    assert cited_paths.problems(tmp_path) == [
        "docs/page.md:1: audio/gone (no such file or folder)",
        "docs/page.md:1: whisper_endpoint/asr/gone.py (no such file or folder)",
        "docs/page.md:4: scripts/out (no such file or folder)",
        "whisper_endpoint/asr/speech.py:1: asr/gone.py (no such file or folder)",
        "scripts/tool.py:1: bench/missing.py (no such file or folder)",
        "scripts/tool.py:2: support/gone.py (no such file or folder)",
    ]
