"""The documentation stays true: generated parts are current, links resolve, no tracker numbers.

Generated parts (scripts/generate_docs.py): the parameter and settings tables from the pydantic
schemas, the benchmark results block and plot from results/benchmarks.json. Nothing is measured here:
the check only regenerates from the schemas and the results file (the plot by the digest it carries).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts import check_links, generate_docs

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = ["README.md", "CHANGELOG.md", "docs/*.md", "audio/**/README.md"]


def test_generated_docs_are_current():
    assert generate_docs.stale_names() == [], "stale generated docs: run python -m scripts.generate_docs"


def test_every_relative_link_and_anchor_resolves():
    pages = check_links.pages()
    assert {"README.md", "CHANGELOG.md", "docs/index.md"} <= {str(page.relative_to(ROOT)) for page in pages}
    assert [problem for page in pages for problem in check_links.broken(page)] == []


def test_the_link_check_sees_a_broken_file_and_a_broken_anchor(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## Settings (`ServerSettings`, environment)\n")
    page = tmp_path / "README.md"
    page.write_text("# Top\n\n[ok](docs/other.md#settings-serversettings-environment) [self](#top)\n"
                    "[gone](docs/missing.md) [bad anchor](docs/other.md#settings) `[in code](nowhere.md)`\n"
                    "```\n[in a block](nowhere.md)\n```\n[web](https://example.com/x.md)\n")
    problems = check_links.broken(page, root=tmp_path)
    assert problems == ["README.md: docs/missing.md (no such file)",
                        "README.md: docs/other.md#settings (no heading with that anchor in docs/other.md)"]


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Settings (`ServerSettings`, environment variables)", "settings-serversettings-environment-variables"),
    ("Floors (`scripts/check_lowest.sh`, not in CI)", "floors-scriptscheck_lowestsh-not-in-ci"),
    ("Requests at once: what is safe and what it costs", "requests-at-once-what-is-safe-and-what-it-costs"),
])
def test_anchors_follow_github(heading, anchor):
    assert check_links.slug(heading) == anchor


def test_user_docs_name_no_tracker_numbers():
    """Readers have no access to the tracker: say what a change was, not its number."""
    pattern = re.compile(r"\bissues?\s*#?\d+|(?<![\w&/])#\d+\b|_issue\d+", re.IGNORECASE)
    hits = [f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}"
            for glob in USER_DOCS for path in sorted(ROOT.glob(glob))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []
