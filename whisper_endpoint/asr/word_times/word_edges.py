"""Word ends next to pauses, from the signal.

Cross-attention says where a word starts (word_onsets.py) but not where its sound stops: the word
before a pause ran on to the next token's onset, or stopped short of its own sound. The pauses are
found in the audio instead: stretches of at least ``MIN_PAUSE_S`` whose level stays below halfway (in
dB) between the local noise floor and the local speech level. The last word starting before a pause
ends where the pause begins; a word starting deep inside a pause starts where it ends. Stop closures
inside words (30-80 ms of near silence) are shorter than a pause.

Where the audio has no such contrast (speech over steady noise or music: floor and speech level
closer than ``MIN_CONTRAST_DB``), nothing moves.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Word

HOP = 80  # samples: 5 ms frames, each measured over 10 ms
BLOCK = 400  # frames: levels are taken per 2 s block, then over the two blocks either side
MIN_PAUSE_S = 0.08
MIN_CONTRAST_DB = 20.0
END_REACH_S = 0.5  # a word ending this much before a pause still ends at it: its sound ran on
START_SLACK_S = 0.1  # a start this deep inside a pause is wrong (a word starting at its edge is not)
MIN_WORD_S = 0.03


def pauses(samples: np.ndarray) -> list[tuple[float, float]]:
    """(start, end) in seconds of each pause in ``samples`` (16 kHz mono)."""
    level = _levels(samples)
    if not len(level):
        return []
    floor, loud = _local(level, 5, np.min), _local(level, 95, np.max)
    loudest = np.percentile(level, 95)
    contrast = loud - floor >= MIN_CONTRAST_DB
    # Without contrast a neighbourhood is silence (far below the file's speech) or speech throughout.
    quiet = np.where(contrast, level < (floor + loud) / 2, loud < loudest - MIN_CONTRAST_DB)
    edges = np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    seconds = HOP / SAMPLE_RATE
    return [(s * seconds, e * seconds) for s, e in zip(starts, ends) if (e - s) * seconds >= MIN_PAUSE_S]


def snapped(segments: list[Segment], samples: np.ndarray) -> list[Segment]:
    """``segments`` with the edges of their words next to pauses moved onto them (segments span their words)."""
    words = [word for segment in segments for word in (segment.words or ())]
    if not words:
        return segments
    moved = iter(_snap(words, pauses(samples)))
    out = []
    for segment in segments:
        if not segment.words:
            out.append(segment)
            continue
        new = tuple(next(moved) for _ in segment.words)
        out.append(replace(segment, start=new[0].start, end=new[-1].end, words=new))
    return out


def _snap(words: list[Word], found: list[tuple[float, float]]) -> list[Word]:
    starts = np.array([word.start for word in words])
    edges = [[word.start, word.end] for word in words]
    for begin, end in found:
        after = int(np.searchsorted(starts, begin))  # the first word starting at or after the pause's start
        if after < len(words) and edges[after][0] < end - START_SLACK_S and edges[after][1] - end >= MIN_WORD_S:
            edges[after][0] = end
        if after > 0:
            before = edges[after - 1]
            if begin - before[0] >= MIN_WORD_S and before[1] > begin - END_REACH_S:
                before[1] = begin
    return [replace(word, start=float(s), end=float(e)) for word, (s, e) in zip(words, edges)]


def _levels(samples: np.ndarray) -> np.ndarray:
    """dB of each 5 ms frame, measured over 10 ms."""
    frames = len(samples) // HOP
    power = np.square(samples[: frames * HOP].astype(np.float64)).reshape(frames, HOP).mean(axis=1)
    power[1:] = (power[1:] + power[:-1]) / 2
    return 10 * np.log10(power + 1e-12)


def _local(level: np.ndarray, percentile: float, widen) -> np.ndarray:
    """Per frame: the percentile of its 2 s block, widened (min or max) over two blocks either side."""
    blocks = [np.percentile(level[i: i + BLOCK], percentile) for i in range(0, len(level), BLOCK)]
    padded = np.pad(blocks, 2, mode="edge")
    widened = widen(np.lib.stride_tricks.sliding_window_view(padded, 5), axis=1)
    return np.repeat(widened, BLOCK)[: len(level)]
