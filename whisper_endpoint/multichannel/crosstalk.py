"""Mute each channel where another channel is much louder: the other party's voice leaking in.

On a call or headset recording each party's voice also reaches the other channels, far below its own.
Whisper and its VAD transcribe such a leak as if it were speech on that channel, so every turn would
come back once per channel. A channel is muted wherever its short-time level stays more than
``CROSSTALK_MARGIN_DB`` under the loudest channel's: a leak sits far below its source, while two
parties talking at once are both near full level and both kept.
"""

from __future__ import annotations

import numpy as np

CROSSTALK_MARGIN_DB = 15.0  # set, not tuned: between a leak (-25 dB in the evaluation) and two live voices
FRAME = 160  # 10 ms at 16 kHz
SMOOTH_FRAMES = 5  # levels averaged over 50 ms: syllables, not single periods, are compared
_FLOOR = 1e-10  # power of digital silence, so that log10 stays finite


def gate_crosstalk(channels: np.ndarray, margin_db: float = CROSSTALK_MARGIN_DB) -> np.ndarray:
    """``channels`` (channels x n) with every 10 ms frame muted where its channel is more than
    ``margin_db`` under the loudest channel at that time. Returns a new array."""
    count, length = channels.shape
    frames = -(-length // FRAME)
    padded = np.zeros((count, frames * FRAME), np.float32)
    padded[:, :length] = channels
    power = np.square(padded).reshape(count, frames, FRAME).mean(axis=2)
    kernel = np.ones(SMOOTH_FRAMES) / SMOOTH_FRAMES
    level = np.stack([10 * np.log10(np.convolve(row, kernel, mode="same") + _FLOOR) for row in power])
    keep = level >= level.max(axis=0, keepdims=True) - margin_db  # (channels, frames)
    return (padded * np.repeat(keep, FRAME, axis=1))[:, :length]
