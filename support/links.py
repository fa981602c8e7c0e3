"""Every relative link and #anchor in the user docs resolves: ``python -m support.links``.

Checks README.md, CHANGELOG.md, docs/*.md and the notes, docs/notes/*.md: a relative link must
name a file or folder of the repository, and an anchor (``page.md#section`` or ``#section``) a heading
of that page under GitHub's slug rules: lower case, punctuation but ``-`` and ``_`` dropped, spaces to
``-``, a repeated heading numbered ``-1``, ``-2``. Links inside code are not links; absolute URLs are not
followed (nothing here reaches the network).
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", "CHANGELOG.md", "docs/*.md", "docs/notes/*.md")
_PARSER = MarkdownIt("commonmark").enable("table")


def pages(root: Path = ROOT) -> list[Path]:
    return sorted(path for pattern in PAGES for path in root.glob(pattern))


def slug(text: str) -> str:
    """GitHub's anchor for a heading's text."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _inline_text(token) -> str:
    return "".join(child.content for child in token.children or () if child.type in ("text", "code_inline"))


@cache
def anchors(path: Path) -> frozenset[str]:
    tokens = _PARSER.parse(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            base = slug(_inline_text(inline))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    for match in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")):
        found.add(match.group(1))
    return frozenset(found)


def links(path: Path) -> list[str]:
    """Targets of the page's links and images, outside code."""
    targets = []
    for token in _PARSER.parse(path.read_text(encoding="utf-8")):
        for child in token.children or ():
            if child.type == "link_open":
                targets.append(child.attrs.get("href", ""))
            elif child.type == "image":
                targets.append(child.attrs.get("src", ""))
    return targets


def broken(path: Path, root: Path = ROOT) -> list[str]:
    """'page: target (why)' for each link of the page that does not resolve."""
    problems = []
    for target in links(path):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or target.startswith("mailto:"):
            continue
        file = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        shown = f"{path.relative_to(root)}: {target}"
        if not file.exists():
            problems.append(f"{shown} (no such file)")
        elif not file.is_relative_to(root):
            problems.append(f"{shown} (outside the repository)")
        elif parts.fragment and file.suffix == ".md" and unquote(parts.fragment) not in anchors(file):
            problems.append(f"{shown} (no heading with that anchor in {file.relative_to(root)})")
    return problems


def main() -> int:
    problems = [problem for page in pages() for problem in broken(page)]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
