"""The loaded models are set aside from Python's cyclic collections, and a dropped model is still freed."""

from __future__ import annotations

import gc
import weakref

from whisper_endpoint.core import heap


class _Node:
    other = None


def test_set_aside_objects_skip_collections_until_released():
    first, second = _Node(), _Node()
    first.other, second.other = second, first  # a cycle: only the cyclic collector frees it
    alive = weakref.ref(first)
    heap.set_aside_loaded()
    del first, second
    gc.collect()
    assert alive() is not None  # set aside: a request's collection does not walk it
    heap.release()
    assert alive() is None  # an unloaded model's cycles are freed
