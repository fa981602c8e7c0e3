"""The per-turn re-check: a turn whose own embedding is nearest another speaker's centroid moves there."""

import numpy as np
from pyannote.core import Annotation, Segment

from whisper_endpoint.diarization.embedded.refinements.turn_check import (
    Move,
    apply,
    moves,
)

LABELS = ["A", "B"]
CENTROIDS = np.array([[1.0, 0.0], [0.0, 1.0]])


def annotation(*turns) -> Annotation:
    result = Annotation()
    for start, end, label in turns:
        result[Segment(start, end), result.new_track(Segment(start, end))] = label
    return result


def embed_as(voices: dict):
    """Embeddings by turn start: the voice each turn really has."""
    return lambda span: np.array(voices[span.start], dtype=float)


def test_a_turn_nearest_another_centroid_moves_and_the_others_stay():
    exclusive = annotation((0, 3, "A"), (3, 5, "A"), (5, 9, "B"))
    found = moves(exclusive, LABELS, CENTROIDS, embed_as({0: [0.9, 0.1], 3: [0.2, 0.8], 5: [0.1, 0.7]}))
    assert found == [Move(Segment(3, 5), "A", "B")]
    moved = apply(exclusive, found)
    assert [(s.start, s.end, label) for s, _, label in moved.itertracks(yield_label=True)] == [(0, 3, "A"), (3, 9, "B")]


def test_short_turns_and_unusable_embeddings_are_left_alone():
    exclusive = annotation((0, 0.8, "A"), (1, 3, "A"), (3, 6, "B"))
    voices = embed_as({0: [0.0, 1.0], 1: [np.nan, np.nan], 3: [0.0, 0.0]})
    assert moves(exclusive, LABELS, CENTROIDS, voices) == []


def test_one_usable_centroid_moves_nothing():
    exclusive = annotation((0, 3, "A"), (3, 6, "B"))
    centroids = np.array([[1.0, 0.0], [np.nan, np.nan]])
    assert moves(exclusive, LABELS, centroids, embed_as({0: [0.0, 1.0], 3: [1.0, 0.0]})) == []


def test_the_regular_diarization_moves_over_the_same_span_only():
    # Overlap-aware output: A talks 0-6, B overlaps 4-8. Moving A's 2-4 s to B splits A's turn there
    # and leaves B's own turn as it was (joined with the moved part, which touches it).
    regular = annotation((0, 6, "A"), (4, 8, "B"))
    moved = apply(regular, [Move(Segment(2, 4), "A", "B")])
    assert sorted((s.start, s.end, label) for s, _, label in moved.itertracks(yield_label=True)) == [
        (0, 2, "A"), (2, 8, "B"), (4, 6, "A")]
