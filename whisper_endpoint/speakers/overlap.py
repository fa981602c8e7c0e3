"""People talking at once: where the diarization hears two speakers, who said the words there, and the
marks the response's speaker runs carry.

The words are labelled from the exclusive diarization (one speaker at a time, ``merge.py``), which in an
overlap keeps whichever speaker its frames rate higher: the ongoing speaker's last words go to the one who
cuts in, and a listener's "yeah" inside a long turn vanishes. The regular diarization keeps both speakers'
turns; where they overlap (``stretches``), a word is decided by what the transcript says (WhisperX and
pyannote leave it to the max-overlap vote):

1. A word that carries on the previous word's sentence (that word ends no sentence) stays with the previous
   word's speaker: an ongoing sentence is not cut by a newcomer (the diarization often gives the end of
   the ongoing sentence a turn of its own in the overlap, under either speaker's label).
2. A word that starts a sentence after the previous word's speaker ended one goes to the other speaker of
   the stretch (when there is one other, its turn meets the word) if that speaker says the whole sentence
   inside its turn (the listener's "yeah", which the exclusive diarization leaves out) or goes on talking
   after the stretch (the one who cut in). Else the words stay as labelled: when the ASR did not write the
   "yeah", the next sentence is still the ongoing speaker's.

Both hold only inside stretches of at least ``MIN_OVERLAP_S``, before the smoothing (which leaves a
sentence of its own, "Yeah.", alone). ``marked`` adds ``overlap: [[start, end, other speaker], ...]`` to the
speaker runs that such a stretch meets (absent where none does).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from whisper_endpoint.core.sentences import ends_sentence
from whisper_endpoint.core.types import SpeakerTurn, clamped

# How far a sentence may run past the turn it is said in (Whisper's word ends against pyannote's frames).
EDGE_S = 0.25
# Shorter overlaps are the two turns' edges meeting (pyannote's frames are ~17 ms), not two people talking.
MIN_OVERLAP_S = 0.2
# A run that only grazes a stretch (the words' edges against the turns') is not marked.
MIN_MARK_S = 0.1


@dataclass(frozen=True)
class Stretch:
    """A time when several speakers talk: ``turns``, the regular turns alive then."""

    start: float
    end: float
    turns: tuple[SpeakerTurn, ...]

    @property
    def speakers(self) -> set[str]:
        return {turn.speaker for turn in self.turns}


def stretches(turns: Iterable[SpeakerTurn], min_s: float = MIN_OVERLAP_S) -> list[Stretch]:
    """The stretches, in time order, where turns of at least two speakers are alive, ``min_s`` or longer
    (each a span with one set of turns alive). One sweep over the turns' edges: a few turns are alive at
    a time, so hours of turns cost what sorting them does."""
    turns = sorted(turns, key=lambda t: (t.start, t.end))
    edges = sorted({t for turn in turns for t in (turn.start, turn.end)})
    found: list[Stretch] = []
    alive: list[SpeakerTurn] = []
    added = 0
    for start, end in itertools.pairwise(edges):
        while added < len(turns) and turns[added].start <= start:
            alive.append(turns[added])
            added += 1
        alive = [t for t in alive if t.end >= end]  # alive through [start, end]
        if len({t.speaker for t in alive}) < 2:
            continue
        if found and found[-1].end == start and found[-1].turns == tuple(alive):
            found[-1] = replace(found[-1], end=end)
        else:
            found.append(Stretch(start, end, tuple(alive)))
    joined = _joined(found)
    return [s for s in joined if s.end - s.start >= min_s]


def _joined(found: list[Stretch]) -> list[Stretch]:
    """Back-to-back stretches of the same speakers as one (a third turn starting inside splits them)."""
    out: list[Stretch] = []
    for stretch in found:
        if out and out[-1].end == stretch.start and out[-1].speakers == stretch.speakers:
            out[-1] = Stretch(out[-1].start, stretch.end, tuple(dict.fromkeys((*out[-1].turns, *stretch.turns))))
        else:
            out.append(stretch)
    return out


def owners(labeled: Sequence, found: Sequence[Stretch]) -> list:
    """``labeled`` (merge.LabeledWord) with the words inside ``found`` given by rules 1 and 2."""
    out = list(labeled)
    if not found:
        return out
    at = 0
    for i, word in enumerate(out):
        middle = (word.start + word.end) / 2
        while at < len(found) and found[at].end < middle:
            at += 1
        if i == 0 or at == len(found) or found[at].start > middle or word.whole_segment:
            continue
        speaker = _owner(found[at], out, i)
        if speaker is not None:
            out[i] = replace(word, speaker=speaker)
    return out


def _owner(stretch: Stretch, words: Sequence, i: int) -> str | None:
    previous, word = words[i - 1], words[i]
    if not ends_sentence(previous.text):  # rule 1
        return previous.speaker
    others = [t for t in stretch.turns if t.speaker != previous.speaker]  # rule 2
    if len({t.speaker for t in others}) != 1 or not any(t.start <= word.end and word.start <= t.end for t in others):
        return None
    other = others[0].speaker
    limit = max(t.end for t in others) + EDGE_S  # the sentence must end by then to be said inside the turn
    end = next((w.end for w in _from(words, i) if ends_sentence(w.text) or w.end > limit), words[-1].end)
    after = next((w.speaker for w in _from(words, i) if (w.start + w.end) / 2 > stretch.end), None)
    said_inside = end <= limit  # the whole sentence inside the other's turn: "Yeah."
    return other if said_inside or after == other else None


def _from(items: Sequence, i: int) -> Iterator:
    """``items[i:]`` without copying them (a look-ahead stops early)."""
    return (items[j] for j in range(i, len(items)))  # islice would walk the first i


def marked(runs: list[dict], found: Sequence[Stretch], duration: float | None = None) -> list[dict]:
    """``runs`` with ``overlap``: each stretch meeting a run for ``MIN_MARK_S`` or more, cut to the run's span,
    once per other speaker of the stretch; runs no stretch meets are left as they are."""
    out = []
    at = 0  # runs and stretches are both in time order
    for run in runs:
        start, end = run["timestamp"]
        while at < len(found) and found[at].end <= start:
            at += 1
        marks = []
        for stretch in itertools.takewhile(lambda s, end=end: s.start < end, _from(found, at)):
            if min(end, stretch.end) - max(start, stretch.start) >= MIN_MARK_S:
                marks += [[clamped(max(start, stretch.start), duration), clamped(min(end, stretch.end), duration), other]
                          for other in sorted(stretch.speakers - {run["speaker"]})]
        out.append({**run, "overlap": marks} if marks else run)
    return out
