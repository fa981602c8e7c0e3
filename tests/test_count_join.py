"""The count's join and its uncertainty (issue 75, whisper_endpoint/diarization/embedded/refinements/count_check.py):
two labels of one voice become one speaker, alike but separate voices stay apart, and a count decided near
a threshold says so, on made-up embeddings (on a real recording: tests/test_count_check.py)."""

import numpy as np
from pyannote.core import Annotation, Segment

from whisper_endpoint.diarization.embedded.refinements.count_check import (
    CountCheckOptions,
    join,
    uncertain,
)

A, B = np.eye(8)[0], np.eye(8)[1]


def near(direction, spread: float, seed: int):
    """An embedding near ``direction``: off it by noise of ``spread`` per axis."""
    return direction + np.random.default_rng(seed).normal(size=len(direction)) * spread


def speakers(*labelled) -> tuple[Annotation, dict]:
    """Each (label, embedding) a 3 s turn, 1 s apart; returns the turns and their embeddings by start."""
    exclusive, embeddings = Annotation(), {}
    for index, (label, embedding) in enumerate(labelled):
        turn = Segment(4 * index, 4 * index + 3)
        exclusive[turn] = label
        embeddings[turn.start] = embedding
    return exclusive, embeddings


def by_start(embeddings: dict):
    return lambda turn: embeddings[turn.start]


def test_two_labels_of_one_voice_are_joined_and_two_voices_are_not():
    one_voice = [("SPEAKER_00", near(A, 0.1, i)) for i in range(3)] + [("SPEAKER_01", near(A, 0.1, 9 + i)) for i in range(2)]
    exclusive, embeddings = speakers(*one_voice, *[("SPEAKER_02", near(B, 0.1, 20 + i)) for i in range(3)])
    found = join(exclusive, ["SPEAKER_00", "SPEAKER_01", "SPEAKER_02"], by_start(embeddings))
    assert found.joins == {"SPEAKER_01": "SPEAKER_00"}
    alike = near(A, 0.0, 0) + 0.8 * B  # a voice near A, but nearer its own turns than A's
    exclusive, embeddings = speakers(*[("SPEAKER_00", near(A, 0.1, i)) for i in range(3)],
                                     *[("SPEAKER_01", near(alike, 0.1, 30 + i)) for i in range(3)])
    assert join(exclusive, ["SPEAKER_00", "SPEAKER_01"], by_start(embeddings)).joins == {}


def test_min_speakers_bounds_the_joins_and_a_near_call_is_reported():
    exclusive, embeddings = speakers(*[("SPEAKER_00", near(A, 0.1, i)) for i in range(3)],
                                     *[("SPEAKER_01", near(A, 0.1, 9 + i)) for i in range(3)])
    assert join(exclusive, ["SPEAKER_00", "SPEAKER_01"], by_start(embeddings), keep=2).joins == {}
    wide = CountCheckOptions(close=10.0)  # every call is near
    assert join(exclusive, ["SPEAKER_00", "SPEAKER_01"], by_start(embeddings), wide).close == {+1}
    assert uncertain(2, {+1}) == ("the speaker count is uncertain: 2 speakers found, 3 nearly (two alike voices "
                                  "may have been taken for one); pass num_speakers if you know how many spoke")
    assert uncertain(1, {-1, +1}).startswith("the speaker count is uncertain: 1 speaker found, 2 nearly (")


def test_a_speaker_of_one_turn_joins_only_when_nearer():
    """One turn shows little of how its voice varies: on real speech (16 s of pyannote's sample) one
    person's single turn sat 0.06 from the other's turns, where one voice's single-turn labels sat at -0.12
    to 0.00; a single turn joins under 0.03, not under the 0.10 of two speakers of two turns or more."""
    labels = ["SPEAKER_00", "SPEAKER_01"]
    three = [("SPEAKER_00", near(A, 0.1, i)) for i in range(3)]
    apart, embeddings = speakers(*three, ("SPEAKER_01", A + 0.4 * B))  # a gap of about 0.05
    assert join(apart, labels, by_start(embeddings)).joins == {}
    alike, embeddings = speakers(*three, ("SPEAKER_01", A + 0.1 * B))  # about 0.01
    assert join(alike, labels, by_start(embeddings)).joins == {"SPEAKER_01": "SPEAKER_00"}
    lone, embeddings = speakers(("SPEAKER_00", A), ("SPEAKER_01", A))  # one turn each: nothing to compare
    assert join(lone, labels, by_start(embeddings)).joins == {}
