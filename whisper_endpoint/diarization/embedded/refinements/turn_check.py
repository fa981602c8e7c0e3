"""A second look at each turn: its own embedding, against every speaker's centroid.

pyannote labels a turn through the local speaker its 10 s windows saw. When two alike voices follow each
other closely, a window can take the end of one turn and the start of the next for one local speaker,
and the mixed embedding sends that stretch to the wrong cluster. Each exclusive turn of at least
``min_duration`` seconds is embedded on its own (pooled from the CAM++ frames of the whole input) and
given to the speaker whose centroid is nearest; turns that already match keep their label. The same
move is applied to the regular (overlap-aware) diarization over the same span. ``min_duration`` (1 s)
keeps shorter speech, whose embeddings are unreliable, where the clustering put it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pyannote.core import Annotation, Segment

MIN_DURATION_S = 1.0


@dataclass(frozen=True)
class Move:
    span: Segment
    old: str
    new: str


def moves(
    exclusive: Annotation,
    labels: list[str],
    centroids: np.ndarray,
    embed: Callable[[Segment], np.ndarray],
    min_duration: float = MIN_DURATION_S,
) -> list[Move]:
    """Turns whose own embedding is nearest (cosine) to another speaker's centroid."""
    norms = np.linalg.norm(centroids, axis=1, keepdims=True)
    usable = np.isfinite(centroids).all(axis=1) & (norms[:, 0] > 0)
    if usable.sum() < 2:
        return []
    unit = np.where(usable[:, None], centroids, 0) / np.where(norms > 0, norms, 1)
    found = []
    for turn, _, label in exclusive.itertracks(yield_label=True):
        if turn.duration < min_duration:
            continue
        embedding = np.asarray(embed(turn), dtype=np.float64)
        length = np.linalg.norm(embedding)
        if not np.isfinite(length) or length == 0:
            continue
        similarity = np.where(usable, unit @ (embedding / length), -np.inf)
        nearest = labels[int(np.argmax(similarity))]
        if nearest != label:
            found.append(Move(turn, label, nearest))
    return found


def apply(annotation: Annotation, found: list[Move]) -> Annotation:
    """The annotation with each move's span relabelled (only tracks of the move's old speaker)."""
    result = annotation.copy()
    for move in found:
        for segment, track, label in list(result.itertracks(yield_label=True)):
            if label != move.old or not segment.intersects(move.span):
                continue
            del result[segment, track]
            inside = segment & move.span
            for piece, speaker in ((Segment(segment.start, inside.start), move.old), (inside, move.new),
                                   (Segment(inside.end, segment.end), move.old)):
                if piece.duration > 0:
                    result[piece, result.new_track(piece)] = speaker
    return result.support()
