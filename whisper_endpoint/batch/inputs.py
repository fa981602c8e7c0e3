"""Which files a batch covers, and the relative path each one's results mirror.

Inputs are folders (searched recursively for audio and video files), glob patterns, single files
and manifests (one path per line; relative lines are relative to the manifest's folder). Every file
gets a relative path from the common folder of the sources, so two ``x.flac`` in different folders
never write to the same result file.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

# What a folder search picks up (anything FFmpeg decodes; globs and manifests take any file).
MEDIA_SUFFIXES = frozenset(
    ".flac .wav .mp3 .ogg .oga .opus .m4a .aac .wma .aif .aiff .amr .webm .mp4 .mkv .mov .mka".split()
)
_WILDCARDS = ("*", "?", "[")


class InputError(ValueError):
    """An input that names nothing usable (a missing path, an empty glob, an unreadable manifest)."""


@dataclass(frozen=True)
class Item:
    path: str  # absolute
    relative: str  # POSIX-style path under the output folder, the file name included

    def as_row(self) -> dict:
        return {"path": self.path, "relative": self.relative}


def collect(sources: list[str], manifests: list[str] = ()) -> list[Item]:
    """Every file the sources name, once each, in a stable order."""
    found: list[tuple[Path, Path]] = []  # (file, the root of the source that named it)
    for source in sources:
        found.extend(_expand(source))
    for manifest in manifests:
        found.extend(_read_manifest(Path(manifest)))
    if not found:
        raise InputError("no input files: give folders, glob patterns, files or --manifest")
    roots = {str(root) for _, root in found}
    common = Path(os.path.commonpath(sorted(roots)))
    items: dict[str, Item] = {}
    for path, _ in found:
        items.setdefault(str(path), Item(str(path), path.relative_to(common).as_posix()))
    return sorted(items.values(), key=lambda item: item.relative)


def _expand(source: str) -> list[tuple[Path, Path]]:
    if any(mark in source for mark in _WILDCARDS):
        root = _static_root(source)
        paths = [Path(p).resolve() for p in glob.glob(source, recursive=True) if Path(p).is_file()]
        if not paths:
            raise InputError(f"the pattern {source!r} matches no files")
        return [(p, root) for p in paths]
    path = Path(source).resolve()
    if path.is_dir():
        files = [p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in MEDIA_SUFFIXES]
        if not files:
            kinds = " ".join(sorted(MEDIA_SUFFIXES))
            raise InputError(f"the folder {source!r} holds no audio or video files ({kinds})")
        return [(p, path) for p in files]
    if path.is_file():
        return [(path, path.parent)]
    raise InputError(f"no such file or folder: {source!r}")


def _static_root(pattern: str) -> Path:
    """The folder part of a pattern before its first wildcard: ``audio/**/*.flac`` -> ``audio``."""
    parts = []
    for part in Path(pattern).parts:
        if any(mark in part for mark in _WILDCARDS):
            break
        parts.append(part)
    return Path(*parts).resolve() if parts else Path.cwd()


def _read_manifest(manifest: Path) -> list[tuple[Path, Path]]:
    try:
        lines = manifest.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the manifest {str(manifest)!r}: {exc}") from None
    paths = []
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            paths.append((manifest.parent / line).resolve())
    if not paths:
        raise InputError(f"the manifest {str(manifest)!r} lists no files")
    # A manifest's own root: the common folder of what it lists (missing files fail one by one later).
    root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    return [(p, root) for p in paths]
