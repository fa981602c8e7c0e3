"""Word times from a segment's span, where nothing better was found (issue 69).

A window whose word alignment finds no path (alignment.py), or that was decoded again without word times
after an error (window_fallback.py), still answers a request for word times: its words share their
segment's span in proportion to their length. Their probability is unknown (None), and the request's
warnings count them (cost.py).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from whisper_endpoint.core.types import Segment, Word

_WORD = re.compile(r"\s*\S+")  # a word with the space before it, as Whisper's words are


def edges(lengths: list[int], start: float, end: float) -> list[tuple[float, float]]:
    """Consecutive stretches from ``start`` to ``end``, each as long as its share of ``lengths``."""
    cuts = start + (max(start, end) - start) * np.cumsum([0, *lengths]) / max(1, sum(lengths))
    return [(float(a), float(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def weight(word: str) -> int:
    return len(word.strip()) or 1


def spread_missing(segments: list[Segment]) -> tuple[list[Segment], int]:
    """``segments`` with words spread over each one that has text and no words; the number of such words."""
    out, count = [], 0
    for segment in segments:
        texts = _WORD.findall(segment.text)
        if segment.words is not None or not texts:
            out.append(segment)
            continue
        times = edges([weight(text) for text in texts], segment.start, segment.end)
        words = tuple(Word(round(start, 2), round(end, 2), text) for text, (start, end) in zip(texts, times))
        out.append(replace(segment, words=words))
        count += len(words)
    return out, count
