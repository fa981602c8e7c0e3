"""Each voice's languages, from Whisper's own detection over that voice's speech (issue 58).

A span's detection alone is a weak witness, and so is the mean of a voice's spans' detections: each
span is still judged on its own few seconds, and a Czech voice's lines lean to Polish one by one.
Whisper's language token is surer on more speech of one voice. So a voice's spans, in time order and
up to ``SAMPLE_S`` with ``GAP_S`` of silence between them, are packed into one window, encoded once,
and Whisper's detection over that window is the voice's languages (language_rule.py uses it as the
prior of each of the voice's spans).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from whisper_endpoint.asr import cost
from whisper_endpoint.core.types import SAMPLE_RATE

SAMPLE_S = 29.5  # the voice's speech and the gaps between its spans: one window
GAP_S = 0.5

Detector = Callable[[list[int]], "dict[str, float] | None"]


def detector(hear: Callable[[np.ndarray], dict[str, float]], audio: np.ndarray, spans: list[tuple[float, float]],
             most: int) -> Detector:
    """``languages(indices)``: the languages ``hear`` finds in the speech of the voice that said the spans
    at those indices of ``spans`` (start, end in seconds of ``audio``); None once ``most`` voices were asked
    (each costs an encoder pass, added to the request's bound so that the decoding keeps its own)."""
    asked = 0

    def languages(indices: list[int]) -> dict[str, float] | None:
        nonlocal asked
        if asked >= most:
            return None
        asked += 1
        cost.allow(1)
        return hear(_voice_window(audio, [spans[i] for i in sorted(indices)]))

    return languages


def _voice_window(audio: np.ndarray, spans: list[tuple[float, float]]) -> np.ndarray:
    gap = np.zeros(round(GAP_S * SAMPLE_RATE), dtype=audio.dtype)
    pieces, total = [], 0.0
    for start, end in spans:
        if total + end - start > SAMPLE_S:
            continue
        pieces += [audio[round(start * SAMPLE_RATE): round(end * SAMPLE_RATE)], gap]
        total += end - start + GAP_S
    if not pieces:  # one span longer than the window: its start
        start = spans[0][0]
        return audio[round(start * SAMPLE_RATE): round((start + SAMPLE_S) * SAMPLE_RATE)]
    return np.concatenate(pieces)
