"""The suite's two tiers: a test is ``slow`` when it uses something slow, seen from what it uses.

``./test.sh --fast`` runs ``-m "not slow"``, the inner loop; ``./test.sh`` and CI run both. A test is
slow when it (or a fixture it uses, however deep) takes a slow fixture (PostgreSQL, the browser, Ray, the
base model, the benchmark) or its code starts a server process or an install, loads the base model or
reads the long audio files; ``@pytest.mark.slow`` covers what its code does not show. ``conftest.py``
marks every collected test; a fast test that still takes long is named at the end of the run.
"""

from __future__ import annotations

import inspect
import re
from functools import cache

# fixture -> what makes it slow
SLOW_FIXTURES = {
    "postgres": "PostgreSQL",
    "base_handler": "the base model",
    "browser": "the browser",
    "ray_cluster": "Ray",
    "quick_run": "the benchmark's processes",
    "long_audio": "long audio",
}
# what a test's or its fixtures' code shows -> what it uses
SLOW_CODE = {
    "a server process": re.compile(r"\bPopen\(|\bServerProcess\(|\"whisper_endpoint\.serving\"|held_serve"),
    "a command that loads the models": re.compile(r"\"-m\", \"whisper_endpoint|bin/whisper-endpoint\b"),
    "an install": re.compile(r"\bpip\b.{0,40}\binstall\b|\bvenv\b"),
    "the base model": re.compile(r"embedded:base"),
    "the long audio files": re.compile(r"fillets_long|\blong/|alike_voices"),
    "Ray": re.compile(r"\bray\.init\(|\bserve\.run\("),
}
FAST_LIMIT_S = 20.0  # a test not marked slow that takes longer is named at the end of the run


def reasons(code: str, fixtures: set[str]) -> list[str]:
    """What makes a test slow, from its code and its fixtures' code, and the fixtures it uses."""
    found = [SLOW_FIXTURES[name] for name in sorted(fixtures & SLOW_FIXTURES.keys())]
    found += [what for what, pattern in SLOW_CODE.items() if pattern.search(code)]
    return sorted(set(found))


@cache
def _source(function) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def item_reasons(item) -> list[str]:
    """``reasons`` for a collected pytest item: its function's code and that of every fixture it uses."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = [d for defs in (info.name2fixturedefs.values() if info else ()) for d in defs]
    code = "\n".join([_source(getattr(item, "function", None))] + [_source(d.func) for d in definitions])
    return reasons(code, set(getattr(item, "fixturenames", ())))
