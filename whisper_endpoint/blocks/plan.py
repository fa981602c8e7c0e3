"""Where a long recording is cut into blocks: equal lengths, each cut at the quietest 100 ms near it."""

from __future__ import annotations

import math

import numpy as np

from whisper_endpoint.core.types import SAMPLE_RATE

WHOLE_UP_TO = 1.5  # blocks: audio up to this many is decoded whole, as before blocks existed
SEARCH_S = 10.0  # a cut moves at most this far from its even place, to the quietest frame
FRAME_S = 0.1


def spool_over_s(block_seconds: float) -> float | None:
    """Decoded audio longer than this goes to disk to be read in blocks (None: never)."""
    return block_seconds * WHOLE_UP_TO if block_seconds > 0 else None


def blocks(samples, block_seconds: float) -> list[tuple[int, int]]:
    """The (start, stop) sample ranges the recording is decoded in; one range when it is decoded whole.
    ``samples``: an array or ``SpooledSamples`` (only the samples around each cut are read)."""
    length = len(samples)
    over = spool_over_s(block_seconds)
    if over is None or length <= over * SAMPLE_RATE:
        return [(0, length)]
    count = math.ceil(length / (block_seconds * SAMPLE_RATE))
    cuts = [_quietest_near(samples, round(length * k / count)) for k in range(1, count)]
    edges = [0, *cuts, length]
    return list(zip(edges[:-1], edges[1:]))


def _quietest_near(samples, at: int) -> int:
    """The middle of the quietest 100 ms frame within SEARCH_S of ``at``."""
    frame, reach = round(FRAME_S * SAMPLE_RATE), round(SEARCH_S * SAMPLE_RATE)
    start = max(0, at - reach)
    around = np.asarray(samples[start: min(len(samples), at + reach)], dtype=np.float32)
    frames = len(around) // frame
    if frames < 2:
        return at
    energy = np.square(around[: frames * frame]).reshape(frames, frame).mean(axis=1)
    middles = start + np.arange(frames) * frame + frame // 2
    quietest = np.flatnonzero(energy <= energy.min() * (1 + 1e-6) + 1e-12)  # ties (silence): the nearest
    return int(middles[quietest[np.argmin(np.abs(middles[quietest] - at))]])
