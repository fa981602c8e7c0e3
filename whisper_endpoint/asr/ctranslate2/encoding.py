"""The Whisper encoder on CPU, a few windows at a time instead of the whole batch.

faster-whisper's batched pipeline encodes a batch's windows (up to MAX_BATCH_SIZE, 8 on CPU) in one call.
CTranslate2's encoder holds each layer's attention scores for every window of the call at once (heads x
1500 x 1500 floats), so the call's working set grows with the batch: the largest part of a long request's
peak memory. Encoded ``CPU_PIECE`` windows at a time, the output is the same to the bit with int8, the CPU
default (each window's encoding depends on its own features only; tests/test_encoder_pieces.py); the peak
falls by the other windows' share and the encoder costs less, not more (the smaller working set stays in
the caches: docs/notes/2026-12-03-encoder-in-pieces.md has the figures). A diarized request's diarizer works
alongside the ASR (speakers/alongside.py), so its working set adds to this one. On GPU the batch stays
whole: there the batch is what makes the encoder fast.
"""

from __future__ import annotations

import ctranslate2
import numpy as np

CPU_PIECE = 2  # windows per encoder call on CPU (1 and 2 cost the same; 4 as much as 8)


class EncoderInPieces:
    """Mixed into faster-whisper's ``WhisperModel``: ``encode`` ``CPU_PIECE`` windows at a time on CPU."""

    def encode(self, features: np.ndarray) -> ctranslate2.StorageView:
        if features.ndim == 2 or len(features) <= CPU_PIECE or self.model.device != "cpu":
            return super().encode(features)
        encoded = None
        for start in range(0, len(features), CPU_PIECE):
            piece = np.asarray(super().encode(features[start: start + CPU_PIECE]))
            if encoded is None:
                encoded = np.empty((len(features), *piece.shape[1:]), dtype=piece.dtype)
            encoded[start: start + len(piece)] = piece
        return ctranslate2.StorageView.from_array(encoded)
