"""Every file or folder the docs and the code's docstrings cite exists: ``python -m support.cited_paths``.

Where: the user docs (README.md, CHANGELOG.md, docs/*.md, audio/**/README.md; the notes in docs/notes/ are
history and may name what has gone) and the docstrings (module, class, function) and comments of
``whisper_endpoint/``, ``evaluation/``, ``bench/`` and ``scripts/``.

What counts as a citation: a word with a ``/`` whose first folder is one of the repository's folders,
or one of its top folders even when a move has emptied it (``whisper_endpoint/asr/cost.py``,
``asr/speech.py``, ``scripts/fuzz.py``, ``audio/mixed``, ``../results/x.json``). It resolves against
the repository's root, ``whisper_endpoint/`` (paths written relative to the package), ``audio/`` (the
audio's own labels, ``dialogues/fillets_cave``) and the citing file's folder; a name without a suffix
also resolves to a file of that name with one (a results table's ``long/fillets_long`` is
``audio/long/fillets_long.flac``). Not citations: patterns (``results/NAME.json``, ``docs/*.md``,
``{a,b}``), someone else's layout (SageMaker's ``code/inference.py``, a Hub id, another package's files:
their first folder is none of ours), media types (``audio/wav``), URLs, and a pair of words without a
suffix outside code (``jobs/min``, ``srt/vtt``): a folder written in prose is written in code, ends
with ``/`` or has three parts.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
USER_DOCS = ("README.md", "CHANGELOG.md", "docs/*.md", "audio/**/README.md")
CODE = ("whisper_endpoint", "evaluation", "bench", "scripts")
BASES = ("", "whisper_endpoint", "audio")  # and the citing file's own folder
_SKIPPED_FOLDERS = {"__pycache__", "node_modules", "out"}  # out/: what commands write (.gitignore), cited as their output
# Ours even when a move has emptied one: a citation of it must still resolve.
TOP_FOLDERS = frozenset({*CODE, "support", "tests", "docs", "results", "audio"})

CITATION = re.compile(r"(?<![\w./:@\\-])((?:\.\.?/)*[A-Za-z_][\w.*{}<>\\-]*(?:/[\w.*{}<>\\-]+)+/?)")
_PATTERN = re.compile(r"[*{}<>\\]|(?:^|[/_.-])[A-Z][A-Z0-9]*(?:$|[/_.-])")  # glob, brace, NAME placeholder
_SUFFIX = re.compile(r"\.[A-Za-z][A-Za-z0-9]*$")
_MEDIA_TYPE = re.compile(
    r"^(?:audio|video|text|application|multipart|image)/(?:x-[\w.+-]+|wav|wave|mpeg|mp3|mp4|ogg|flac|webm|aac|"
    r"opus|pcm|pcmu|pcma|basic|video|plain|html|json|event-stream|octet-stream|form-data|png)$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _folders(root: Path) -> frozenset[str]:
    """The names of the repository's folders (hidden ones, caches and environments left out)."""
    names = set()
    for path in root.rglob("*"):
        parts = path.relative_to(root).parts
        if path.is_dir() and not any(part.startswith(".") or part in _SKIPPED_FOLDERS for part in parts):
            names.add(path.name)
    return frozenset(names) | TOP_FOLDERS


def markdown_texts(path: Path) -> list[tuple[int, str, bool]]:
    """(line number, line, inside a fenced block) for each line of a page."""
    texts, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        texts.append((number, line, fenced))
    return texts


def python_texts(path: Path) -> list[tuple[int, str, bool]]:
    """(line number, line, False) for each line of the module's docstrings and comments."""
    source = path.read_text(encoding="utf-8")
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                texts += [(first.lineno + offset, line, False)
                          for offset, line in enumerate(first.value.value.splitlines())]
    texts += [(token.start[0], token.string, False) for token in tokenize.generate_tokens(io.StringIO(source).readline)
              if token.type == tokenize.COMMENT]
    return sorted(texts)


def citations(line: str, in_code: bool, folders: frozenset[str]) -> list[str]:
    """The paths a line cites (see the module's docstring for what counts)."""
    spans = [match.span(2) for match in _CODE_SPAN.finditer(line)]
    found = []
    for match in CITATION.finditer(line):
        path = match.group(1).rstrip(".,:;")
        parts = path.rstrip("/").split("/")
        if _PATTERN.search(path) or _MEDIA_TYPE.match(path):
            continue
        if parts[0] not in folders | {".", ".."}:
            continue
        coded = in_code or any(start <= match.start() and match.end() <= end for start, end in spans)
        if not _SUFFIX.search(parts[-1]) and not (coded or path.endswith("/") or len(parts) > 2):
            continue
        found.append(path)
    return found


def resolves(path: str, citing: Path, root: Path = ROOT) -> bool:
    for base in [root / name for name in BASES] + [citing.parent]:
        target = base / path
        if target.exists():
            return True
        if not _SUFFIX.search(target.name) and target.parent.is_dir() and any(target.parent.glob(target.name + ".*")):
            return True
    return False


def citing_files(root: Path = ROOT) -> list[Path]:
    pages = [path for pattern in USER_DOCS for path in sorted(root.glob(pattern))]
    return pages + [path for folder in CODE for path in sorted((root / folder).rglob("*.py"))]


def problems(root: Path = ROOT) -> list[str]:
    """'file:line: path (no such file or folder)' for each citation that resolves nowhere."""
    folders = _folders(root)
    found = []
    for path in citing_files(root):
        texts = python_texts(path) if path.suffix == ".py" else markdown_texts(path)
        for number, line, in_code in texts:
            for cited in citations(line, in_code, folders):
                if not resolves(cited, path, root):
                    found.append(f"{path.relative_to(root)}:{number}: {cited} (no such file or folder)")
    return found


def main() -> int:
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
