"""A request's encoder outputs, kept from language detection for the decoding (issue 58).

Detecting the language per speech span (span_languages.py) needs each window's encoder output; the
batched pipeline and faster-whisper's ``transcribe`` then encode the same windows again. The backend's
model looks each window's features up here first (``encode``), so a window is encoded once per
request: detection costs one decoder step per span, not a second encoder pass. Keyed by the window's
features (a digest of the bytes), so only a window whose features are exactly the same is reused; an
entry is dropped once used (each window is decoded once), or when its window is cut in pieces
(``forget``), which bounds the memory to the windows not yet decoded. The cache is per request, in its
state (asr/request_state.py), never shared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
import ctranslate2
import numpy as np

from whisper_endpoint.asr import request_state


@contextmanager
def active(enabled: bool = True) -> Iterator[None]:
    """The block in which this thread's encodes go through a new, empty cache (``enabled``: on CPU; on a GPU
    the encoder output stays on the device and encoding again is cheap)."""
    with request_state.opened(encoder_outputs={} if enabled else None):
        yield


def forget(features: np.ndarray) -> None:
    """Forget one window's output (it was cut in pieces: it will not be asked for again)."""
    cache = _cache()
    if cache is not None:
        cache.pop(_key(features), None)


def encode(features: np.ndarray, encoder: Callable[[np.ndarray], object], *, keep: bool = False):
    """``encoder(features)`` with the windows found in the cache taken from it (and dropped), the others
    encoded in one call; ``keep``: store every window's output for a later call (detection)."""
    cache = _cache()
    if cache is None or features.ndim not in (2, 3):
        return encoder(features)
    batch = features if features.ndim == 3 else features[None]
    keys = [_key(row) for row in batch]
    found = {i: cache.pop(key) for i, key in enumerate(keys) if key in cache}
    if not found and not keep:
        return encoder(features)
    missing = [i for i in range(len(batch)) if i not in found]
    if missing:
        encoded = np.asarray(encoder(np.ascontiguousarray(batch[missing])))
        found.update(zip(missing, encoded))
    rows = np.stack([found[i] for i in range(len(batch))])
    if keep:
        cache.update(zip(keys, rows))
    return ctranslate2.StorageView.from_array(np.ascontiguousarray(rows))


def _key(features: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(features).tobytes(), digest_size=16).digest()


def _cache() -> dict | None:
    state = request_state.current()
    return None if state is None else state.encoder_outputs
