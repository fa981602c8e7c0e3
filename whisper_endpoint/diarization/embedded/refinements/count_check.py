"""A second look at the speaker count: speakers whose turns are one voice are joined, a speaker whose
turns fall into separate voices is split.

The clustering counts speakers from 10 s windows; when two voices are alike, the segmentation model
often takes both for one local speaker inside a window, mixed windows join the two clusters, and two
people come out as one. Whole turns do not mix that way. So each turn of at least ``min_turn`` seconds
is embedded on its own (pooled as in the turn check) and each speaker's turns are cut in two by
spectral bisection (the sign of the Fiedler vector of their cosine-similarity graph, as senko's
spectral clustering); the sides are separate voices when every turn is nearer its own side than the
other, by ``separation`` on average, with ``min_turns`` turns and ``min_speech`` seconds a side. Each
side is cut again. The side with the most speech keeps the label; a split-off side the same test cannot
tell from another speaker joins that speaker, any other becomes a new one.

On short recordings the clustering sees few windows and may also give one voice two labels. So before
the split, every two speakers are compared turn by turn (each turn embedded alone, the ``JOIN_TURNS``
longest of each): when their turns are on average as alike across the two as within the more consistent
of them, short of ``join_margin`` (``join_margin_one_turn`` when one has a single turn), they are one
speaker. ``min_speakers`` bounds the joins,
``max_speakers`` the new speakers of the split (the most separated first); with ``num_speakers`` given
the check does not run. A join or split decided within ``close`` of its threshold makes the count uncertain
(``close``: the count one more or one fewer speaker was near), which the response says, so a client can
ask again with ``num_speakers``. How the settings were chosen: docs/diarization.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from pyannote.core import Annotation, Segment

from whisper_endpoint.diarization.base import COUNT_UNCERTAIN
from whisper_endpoint.diarization.embedded.refinements.turn_check import (
    MIN_DURATION_S,
    Move,
)

JOIN_TURNS = 10  # turns per side a join compares at most: CAM++ runs on each alone (bounded cost)


@dataclass(frozen=True)
class CountCheckOptions:
    """Attributes:
      separation: a speaker's turns are two voices when, split in two, every turn is nearer (mean
        cosine similarity) its own side than the other, and by this much on average.
      min_turn: turns shorter than this (seconds) are not embedded, as in the turn check.
      min_speech: seconds of speech each side of a split needs to count as a voice.
      min_turns: turns each side of a split needs to count as a voice.
      join_margin: two speakers are joined when the mean similarity of their turns across the two falls
        short of the mean similarity within the more consistent one by less than this.
      join_margin_one_turn: the same for a speaker of a single turn beside one of ``min_turns`` or more:
        one turn shows little of how its voice varies (two speakers of one turn each are not compared).
      close: a split or join decided within this of its threshold makes the count uncertain (a note).
    """

    separation: float = 0.14
    min_turn: float = MIN_DURATION_S
    min_speech: float = 4.0
    min_turns: int = 2
    join_margin: float = 0.10
    join_margin_one_turn: float = 0.03
    close: float = 0.07


@dataclass(frozen=True)
class Split:
    """What the check found: turns moved to other speakers, and the centroid of every speaker it touched."""

    moves: list[Move] = field(default_factory=list)
    centroids: dict[str, np.ndarray] = field(default_factory=dict)
    close: set[int] = field(default_factory=set)  # +1: one more speaker was close, -1: one fewer


@dataclass(frozen=True)
class Join:
    """Speakers found to be one voice: {label joined: the label it joins}; ``close`` as in ``Split``."""

    joins: dict[str, str] = field(default_factory=dict)
    close: set[int] = field(default_factory=set)


def join(exclusive: Annotation, labels: list[str], embed_alone: Callable[[Segment], np.ndarray],
         options: CountCheckOptions = CountCheckOptions(), keep: int = 1) -> Join:
    """Speakers whose turns (each embedded alone) cannot be told apart, joined two at a time, the pair
    furthest under its margin first, while more than ``keep`` remain: ``join_margin`` for two speakers of
    ``min_turns`` turns or more, ``join_margin_one_turn`` when one of them has a single turn."""
    groups = {label: found for label in labels
              if (found := [t for t in exclusive.label_timeline(label, copy=False) if t.duration >= options.min_turn])}
    owner = {label: label for label in labels}  # every label to the speaker it ended in
    close = set()
    while len(set(owner.values())) > keep:
        below = sorted((_gap(_longest(embed_alone, groups[a]), _longest(embed_alone, groups[b])) - margin, a, b)
                       for a, b in itertools.combinations(sorted(groups), 2)
                       if (margin := _margin(len(groups[a]), len(groups[b]), options)) is not None)
        if not below or below[0][0] >= 0:
            if below and below[0][0] < options.close:
                close.add(-1)
            break
        if below[0][0] > -options.close:
            close.add(+1)
        _, a, b = below[0]
        groups[a] = groups[a] + groups.pop(b)
        owner = {label: a if speaker == b else speaker for label, speaker in owner.items()}
    return Join({label: speaker for label, speaker in owner.items() if label != speaker}, close)


def _margin(turns: int, other: int, options: CountCheckOptions) -> float | None:
    """The join margin of two speakers of ``turns`` and ``other`` turns (None: not compared)."""
    if min(turns, other) >= options.min_turns:
        return options.join_margin
    return options.join_margin_one_turn if max(turns, other) >= options.min_turns else None


def uncertain(found: int, close: set[int]) -> str:
    """The response's note when another count was near: ``found`` speakers, ``close`` as in ``Split``."""
    near = " or ".join(str(found + step) for step in sorted(close) if found + step >= 1)
    why = {+1: "two alike voices may have been taken for one", -1: "one voice may have been taken for two"}
    return (f"{COUNT_UNCERTAIN}: {found} speaker{'' if found == 1 else 's'} found, {near} nearly "
            f"({'; '.join(why[step] for step in sorted(close))}); pass num_speakers if you know how many spoke")


def _gap(mine: np.ndarray, theirs: np.ndarray) -> float:
    """How much less alike two speakers' turns are across the two than within the more consistent one
    (mean cosine similarities; a speaker of one turn has no within)."""
    unit = _unit(np.concatenate([mine, theirs]))
    similarity = unit @ unit.T
    n = len(mine)
    within = [similarity[s][np.triu_indices(len(similarity[s]), 1)].mean()
              for s in (np.s_[:n, :n], np.s_[n:, n:]) if len(similarity[s]) > 1]
    return float(max(within) - similarity[:n, n:].mean())


@dataclass(frozen=True)
class _Voice:
    speaker: str
    turns: list[Segment]
    embeddings: np.ndarray  # (turns, dimension), as embedded
    separation: float  # mean separation of the split that made it: the higher, the surer


def split(
    exclusive: Annotation,
    labels: list[str],
    embed: Callable[[Segment], np.ndarray],
    options: CountCheckOptions = CountCheckOptions(),
    room: int | None = None,
    embed_alone: Callable[[Segment], np.ndarray] | None = None,
) -> Split:
    """Speakers whose turns hold separate voices, split; at most ``room`` new speakers (None: no bound).
    ``embed_alone``: the embedding of a turn's own samples, for the joins (default: ``embed``)."""
    calls: list[bool] = []
    voices = {label: _voices(label, _embedded(exclusive, label, embed, options.min_turn), options, calls)
              for label in labels}
    close = {-1 if made else +1 for made in calls}
    main = {label: found[0] for label, found in voices.items() if found}
    extra = sorted((v for found in voices.values() for v in found[1:]), key=lambda v: -v.separation)
    if not extra:
        return Split(close=close)
    targets = [_same_voice(voice, main, options, embed_alone or embed) for voice in extra]
    new = [voice for voice, target in zip(extra, targets, strict=True) if target is None]
    stay = new[max(room, 0):] if room is not None else []  # not split after all: they stay with their speaker
    owners, taken, moves = {}, set(labels), []
    for voice, target in zip(extra, targets, strict=True):
        if any(voice is v for v in stay):
            target = voice.speaker
        elif target is None:
            target = _free_label(taken)
            taken.add(target)
        owners.setdefault(target, []).append(voice)
        moves += [Move(turn, voice.speaker, target) for turn in voice.turns if target != voice.speaker]
    for voice in extra:  # what is left of each split speaker, and who took a voice, get new centroids
        owners.setdefault(voice.speaker, [])
    centroids = {}
    for label, taken_voices in owners.items():
        held = taken_voices + ([main[label]] if label in main else [])
        centroids[label] = np.concatenate([v.embeddings for v in held]).mean(axis=0)
    return Split(moves, centroids, close)


def _embedded(exclusive: Annotation, label: str, embed, min_turn: float) -> list[tuple[Segment, np.ndarray]]:
    turns = []
    for turn in exclusive.label_timeline(label, copy=False):
        if turn.duration >= min_turn:
            embedding = np.asarray(embed(turn), dtype=np.float64)
            if np.isfinite(embedding).all() and np.linalg.norm(embedding) > 0:
                turns.append((turn, embedding))
    return turns


def _voices(label: str, turns: list[tuple[Segment, np.ndarray]], options: CountCheckOptions,
            calls: list[bool]) -> list[_Voice]:
    """The speaker's voices, the one with the most speech first (one voice when its turns do not split).
    ``calls``: as in ``_bisect``."""
    if not turns:
        return []
    embeddings = np.stack([embedding for _, embedding in turns])
    durations = np.array([turn.duration for turn, _ in turns])
    groups = _bisect(_unit(embeddings), durations, np.arange(len(turns)), 0.0, options, calls)
    groups.sort(key=lambda group: -durations[group[0]].sum())
    return [_Voice(label, [turns[i][0] for i in members], embeddings[members], separation)
            for members, separation in groups]


def _bisect(unit: np.ndarray, durations: np.ndarray, members: np.ndarray, separation: float,
            options: CountCheckOptions, calls: list[bool]) -> list[tuple[np.ndarray, float]]:
    """``members`` cut in two by the sign of the similarity graph's Fiedler vector (spectral bisection, as
    senko's spectral clustering) while the sides are separate voices, each side cut again. ``calls`` gets
    whether each cut decided within ``options.close`` of the threshold was made."""
    if len(members) < 2 * options.min_turns:
        return [(members, separation)]
    similarity = unit[members] @ unit[members].T
    side = _fiedler_side(similarity)
    sides = [members[side], members[~side]]
    if any(len(s) < options.min_turns or durations[s].sum() < options.min_speech for s in sides):
        return [(members, separation)]
    mean, lowest = _separation(similarity, side)
    split = lowest > 0 and mean >= options.separation
    if abs(mean - options.separation) < options.close:
        calls.append(split)
    if not split:
        return [(members, separation)]
    return [group for s in sides for group in _bisect(unit, durations, s, mean, options, calls)]


def _same_voice(voice: _Voice, main: dict[str, _Voice], options: CountCheckOptions,
                embed_alone: Callable[[Segment], np.ndarray]) -> str | None:
    """The other speaker a split-off voice cannot be told apart from (by the same test), if any: it joins
    that speaker instead of becoming a new one (the least separated when several qualify). Both sides are
    embedded alone (``JOIN_TURNS`` longest turns each): pooled frames near a change of speaker also
    heard the neighbour, which sets one voice's turns after different neighbours apart."""
    best, label = None, None
    mine = _longest(embed_alone, voice.turns)
    for other, kept in main.items():
        if other == voice.speaker:
            continue
        unit = _unit(np.concatenate([mine, _longest(embed_alone, kept.turns)]))
        side = np.arange(len(unit)) < len(mine)
        mean, lowest = _separation(unit @ unit.T, side)
        if (lowest <= 0 or mean < options.separation) and (best is None or mean < best):
            best, label = mean, other
    return label


def _longest(embed_alone: Callable[[Segment], np.ndarray], turns: list[Segment]) -> np.ndarray:
    """The ``JOIN_TURNS`` longest turns, each embedded alone (the pipeline's ``embed_alone`` makes each
    turn's once for the whole check)."""
    chosen = sorted(turns, key=lambda turn: -turn.duration)[:JOIN_TURNS]
    return np.stack([np.asarray(embed_alone(turn), dtype=np.float64) for turn in chosen])


def _fiedler_side(similarity: np.ndarray) -> np.ndarray:
    """Which turns fall on the positive side of the normalised Laplacian's second eigenvector."""
    affinity = np.clip(similarity, 0.0, None) + 1e-3  # kept connected: apart groups then fall on two sides
    np.fill_diagonal(affinity, 0.0)
    scale = 1.0 / np.sqrt(affinity.sum(axis=1))
    laplacian = np.eye(len(affinity)) - scale[:, None] * affinity * scale[None, :]
    _, vectors = np.linalg.eigh(laplacian)
    return scale * vectors[:, 1] > 0


def _separation(similarity: np.ndarray, side: np.ndarray) -> tuple[float, float]:
    """(mean, lowest) over turns of: mean similarity to the other turns of its side minus mean similarity
    to the other side's turns (a silhouette); turns alone on their side are left out."""
    margins = []
    for turn in range(len(similarity)):
        own = side == side[turn]
        own[turn] = False
        if own.any() and (side != side[turn]).any():
            margins.append(similarity[turn, own].mean() - similarity[turn, side != side[turn]].mean())
    return (float(np.mean(margins)), float(np.min(margins))) if margins else (0.0, 0.0)


def _unit(embeddings: np.ndarray) -> np.ndarray:
    return embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)


def _free_label(taken: set[str]) -> str:
    index = 0
    while f"SPEAKER_{index:02d}" in taken:
        index += 1
    return f"SPEAKER_{index:02d}"
