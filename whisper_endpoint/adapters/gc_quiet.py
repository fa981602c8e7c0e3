"""The cyclic garbage collector paused while a thread builds a big body's objects.

Decoding a big transcript makes a container object for nearly every value in it; they make the
collector's oldest generation grow, and its full collections walk every object in the process (the
model's included) holding the GIL, while the event loop (``/health``) waits through each
(docs/hardening.md measures it). The objects are freed by reference counting when the work ends (they
hold no cycles), so the collector is off meanwhile and on again after, counted across threads so that
overlapping pauses end with the last one.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused = 0
_enabled_before = True


@contextmanager
def paused() -> Iterator[None]:
    global _paused, _enabled_before
    with _lock:
        if _paused == 0:
            _enabled_before = gc.isenabled()
        _paused += 1
        gc.disable()
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _enabled_before:
                gc.enable()
