"""A request's encoder outputs, kept from language detection for the decoding (issue 58), on either engine.

Detecting the language per speech span (asr/languages/) needs each window's encoder output; the decoding
then encodes the same windows again. Each engine's encoder looks a window's features up here first
(ctranslate2/encoder_cache.py, transformers/kept_encoder.py), so a window is encoded once per request:
detection costs one decoder step per span, not a second encoder pass. Keyed by the window's features (a
digest of the bytes), so only a window whose features are exactly the same is reused; an entry is dropped
once used (each window is decoded once), or when its window is cut in pieces (``forget``), which bounds
the memory to the windows not yet decoded. The outputs are per request, in its state
(asr/request_state.py), never shared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from whisper_endpoint.asr import request_state


@contextmanager
def active(enabled: bool = True) -> Iterator[None]:
    """The block in which this thread's encodes go through a new, empty store (``enabled``: on CPU; on a GPU
    the encoder output stays on the device and encoding again is cheap)."""
    with request_state.opened(encoder_outputs={} if enabled else None):
        yield


def kept() -> dict | None:
    """The request's store (key -> one window's output), or None when none is open."""
    state = request_state.current()
    return None if state is None else state.encoder_outputs


def key(features: np.ndarray) -> bytes:
    """One window's features (float32, as the encoder takes them), as the store knows them."""
    return hashlib.blake2b(np.ascontiguousarray(features, dtype=np.float32).tobytes(), digest_size=16).digest()


def forget(features: np.ndarray) -> None:
    """Forget one window's output (it was cut in pieces: it will not be asked for again)."""
    store = kept()
    if store is not None:
        store.pop(key(features), None)
