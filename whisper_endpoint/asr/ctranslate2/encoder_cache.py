"""A request's encoder outputs on CTranslate2, kept from language detection for the decoding (the store
and its rules: asr/encoder_outputs.py). The backend's model looks each window's features up there first
(``encode``), so a window is encoded once per request."""

from __future__ import annotations

from collections.abc import Callable

import ctranslate2
import numpy as np

from whisper_endpoint.asr import encoder_outputs


def encode(features: np.ndarray, encoder: Callable[[np.ndarray], object], *, keep: bool = False):
    """``encoder(features)`` with the windows found in the cache taken from it (and dropped), the others
    encoded in one call; ``keep``: store every window's output for a later call (detection)."""
    cache = encoder_outputs.kept()
    if cache is None or features.ndim not in (2, 3):
        return encoder(features)
    batch = features if features.ndim == 3 else features[None]
    keys = [encoder_outputs.key(row) for row in batch]
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

