"""Python's cyclic garbage collector and the loaded models: the long-lived objects set aside.

The audio decoders run ``gc.collect()`` after every file (PyAV keeps its resampler buffers alive until
collected, faster-whisper issue #390). A full collection walks every tracked object, and with torch,
pyannote and the models loaded that is every object those libraries and models made, none ever
garbage, on every request (docs/benchmarks.md measures it). Frozen once the models are loaded
(``gc.freeze``, as CPython's docs advise after start-up), a collection walks only what came since. A
model unloaded later is unfrozen with everything else for the one full collection that frees it
(``release``).
"""

from __future__ import annotations

import gc


def set_aside_loaded() -> None:
    """After loading models: collect once, then keep every object now alive out of later collections."""
    gc.collect()
    gc.freeze()


def release() -> None:
    """Collect everything, frozen objects included (a dropped model's cycles), then freeze what is left."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
