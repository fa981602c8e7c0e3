"""audio/generate/rooms.py, loaded from its path (it is a script, not a package): for the rooms
evaluation and the tests that build a line or check the generator."""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

from support.paths import ROOT


@functools.cache
def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rooms_generator", ROOT / "audio" / "generate" / "rooms.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
