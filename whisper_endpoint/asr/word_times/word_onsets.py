"""Word starts at the attention peak of one cross-attention head: the "onset head".

Whisper's word times come from a DTW path through its alignment heads' cross-attention; the path
steps from one token to the next about halfway through the earlier word, so a word's start came
early by half the previous word's duration (issue 59). One decoder head instead puts its attention
peak, in the row that predicts a token, where that token's sound starts: base's layer 4 head 2 and
tiny.en's layer 2 head 4 (found on the tune half of audio/word_times; the measurements are in the
issue's report). Each word's start moves to that peak, looked for from a little before the DTW
start to the DTW end, and the previous word ends there; the DTW path still says which peak belongs
to which word.

Models are recognised by their shape and alignment heads (any conversion of the same OpenAI
checkpoint matches); others keep the DTW times.
"""

from __future__ import annotations

import numpy as np

FRAME_S = 0.02  # one encoder frame (the cross-attention's time step)
REACH_FRAMES = 15  # 0.3 s: how far before its DTW start a word's onset may lie

# (decoder layers, heads per layer, d_model, vocabulary size, alignment heads) -> (layer, head)
_ONSET_HEADS = {
    (6, 8, 512, 51865, ((3, 1), (4, 2), (4, 3), (4, 7), (5, 1), (5, 2), (5, 4), (5, 6))): (4, 2),  # base
    (4, 6, 384, 51864, ((1, 0), (2, 0), (2, 5), (3, 0), (3, 1), (3, 2), (3, 3), (3, 4))): (2, 4),  # tiny.en
}


def onset_head(layers: int, heads: int, d_model: int, vocabulary: int, alignment_heads) -> tuple[int, int] | None:
    """The onset head of a known model, or None."""
    key = (layers, heads, d_model, vocabulary, tuple(tuple(int(i) for i in pair) for pair in alignment_heads or ()))
    return _ONSET_HEADS.get(key)


def onset_frames(attention: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per row of ``attention`` (shape: rows, frames): the frame of its peak between ``starts - REACH_FRAMES``
    and ``ends`` (the DTW's frames for that row's token or word), never before the previous row's."""
    found = np.empty(len(attention))
    earliest = 0
    for row, (start, end) in enumerate(zip(starts, ends)):
        low = min(max(earliest, int(start) - REACH_FRAMES), attention.shape[1] - 1)
        high = max(low + 1, min(int(end) + 1, attention.shape[1]))
        earliest = low + int(np.argmax(attention[row, low:high]))
        found[row] = earliest
    return found


def frame_time(frames):
    """Seconds at the middle of each frame (an onset inside a 20 ms frame is 10 ms in on average)."""
    return (np.asarray(frames) + 0.5) * FRAME_S
