"""Install the lowest versions the requirements allow, and say which floors cannot hold (used by
scripts/check_lowest.sh, inside the layered venv it builds).

    python -m scripts.floors REQUIREMENTS_FILE...

Every requirement with a ">=" lower bound (``-r`` includes followed; the torch family excepted: it
stays the base environment's build) is installed at that floor with ``pip install --no-deps``. Then
the dependencies of those packages, as installed, are checked against what each declares, the way
``pip check`` does but only for what the requirements pull in (the base's own tools may want newer
versions and do not count): a dependency that is missing or out of range is installed (``--no-deps``,
the newest version in range), until everything is consistent. A dependency whose range excludes a
floor means that floor is too low: it is reported and the exit status is 1. pip's resolver is not
used for this because it backtracks through old releases for a long time before it says the same.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

KEPT = {"torch", "torchaudio", "torchvision", "torchcodec"}  # the base's build, CUDA libraries and all
ROUNDS = 10


def requirement_lines(path: Path, seen: set[Path] | None = None):
    seen = set() if seen is None else seen
    if path in seen:
        return
    seen.add(path)
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith(("-r ", "--requirement ")):
            yield from requirement_lines(path.parent / line.split(None, 1)[1], seen)
        elif line and not line.startswith("-"):
            yield Requirement(line)


def floors(files: list[Path]) -> tuple[list[str], dict[str, str]]:
    """The requirements' names, and name -> floor for those with a ">=" bound (torch family excepted)."""
    names, found = [], {}
    for path in files:
        for requirement in requirement_lines(path):
            name = canonicalize_name(requirement.name)
            names.append(name)
            lows = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            if lows and name not in KEPT:
                found[name] = lows[0]
    return names, found


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def unmet(roots: list[str]) -> list[tuple[str, Requirement, str | None]]:
    """(dependent, requirement, installed version) for each dependency of the roots' closure that is not met."""
    environment = default_environment() | {"extra": ""}
    found, queue, seen = [], list(roots), set()
    while queue:
        name = queue.pop()
        if name in seen or installed(name) is None:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate(environment):
                continue
            dependency = canonicalize_name(requirement.name)
            version = installed(dependency)
            if version is None or not requirement.specifier.contains(version, prereleases=True):
                found.append((name, requirement, version))
            queue.append(dependency)
    return found


def pip_install(specs: list[str]) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--quiet", "--no-deps", *specs]
    subprocess.run(command, check=True)
    importlib.invalidate_caches()  # the new distributions must be found by importlib.metadata


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    roots, pinned = floors(args.files)
    pip_install([f"{name}=={version}" for name, version in pinned.items()])
    for _ in range(ROUNDS):
        problems = unmet(roots)
        too_low = [(who, req, version) for who, req, version in problems if canonicalize_name(req.name) in pinned]
        if too_low:
            for who, requirement, version in too_low:
                print(f"floor too low: {who} {installed(who)} requires {requirement}, the floor is {version}")
            return 1
        if not problems:
            return 0
        for who, requirement, version in problems:
            print(f"  {who} {installed(who)} requires {requirement} (installed: {version}): installing it")
        pip_install(sorted({f"{req.name}{req.specifier}" for _, req, _ in problems}))
    print(f"still inconsistent after {ROUNDS} rounds")
    return 1


if __name__ == "__main__":
    sys.exit(main())
