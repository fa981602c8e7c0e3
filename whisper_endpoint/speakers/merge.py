"""Give ASR words speakers from diarization turns, and group them into speaker runs.

Pure functions, no model. The reference handler (and insanely-fast-whisper, speechbox) matched whole
ASR chunks to turns by the nearest chunk END, so a chunk spanning a speaker change was never split,
every turn ate at least one chunk (a 0.4 s "yeah" shifted all later labels), and trailing chunks were
dropped. Here every word is labelled on its own, like WhisperX's ``assign_word_speakers`` (max
overlap) and whisper-diarization (sentence-aware clean-up), in one forward pass.

Rules:

1. Times. A word lacks usable times when its start or end is missing or not finite, or end < start.
   It takes its neighbour's time (zero-length, at the previous word's end; leading words at the
   first timed word's start) and its neighbour's speaker (the previous word's; leading words the
   next timed word's). A word that starts before the previous word ends is moved to start there, so
   output times never go backwards (Whisper's word times are contiguous; this only repairs glitches).
2. Assignment. A word goes to the speaker whose turns overlap it most (overlapping turns vote with
   their overlap; one speaker's turns add up). Ties go to the previous word's speaker, then to the
   earlier turn. A word that overlaps no turn (a gap, a zero-length word) goes to the nearest turn
   (ties: the earlier one). Turns with non-finite times or end < start are ignored.
3. No turns (diarization found nobody): every word gets ``no_turns_speaker``, "SPEAKER_00" by
   default (pyannote's first label), so ``speaker`` stays a string; pass None for "unknown".
4. Smoothing (``smooth``). A lone word whose two neighbours share another speaker takes their
   speaker, unless it is its own sentence or the diarization is sure of it: it is kept when the
   previous word or the word itself ends a sentence (``.?!`` and CJK equivalents), when pauses of at
   least ``SMOOTH_PAUSE_S`` lie on both sides, or when its speaker out-votes the runner-up by at
   least ``SMOOTH_MAX_EVIDENCE`` of the word's duration. So "Yes." between sentences stays, "the" in
   the middle of a sentence under a diarization blip does not.
5. Segments without word times (``lacks_words``: spoken, but no words came with them) go whole to the
   speaker who overlaps them most, in line with the words around them; smoothing leaves them alone.
   Only those segments: the rest of the request stays word by word.
6. Overlaps (``overlaps``: where the regular diarization hears two speakers at once): the words there
   are given by what the transcript says, before the smoothing (``overlap.py``).

Cost: turns are sorted once; words are visited once in order while a pointer walks the turns, so
each word looks only at the turns alive at its time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from whisper_endpoint.core.sentences import ends_sentence
from whisper_endpoint.core.types import Segment, SpeakerTurn
from whisper_endpoint.speakers import overlap

NO_TURNS_SPEAKER = "SPEAKER_00"
SMOOTH_MAX_EVIDENCE = 0.5  # fraction of the word's duration
SMOOTH_PAUSE_S = 0.5


class Timed(Protocol):
    """Anything with a time span and text: a results.Word, a results.Segment."""

    start: float | None
    end: float | None
    text: str


@dataclass(frozen=True, slots=True)
class LabeledWord:
    start: float
    end: float
    text: str
    speaker: str | None
    # How much the chosen speaker's overlap beats the runner-up's, as a fraction of the word's
    # duration: 1.0 = only this speaker covers all of it; 0.0 = a tie, a gap or a borrowed label.
    evidence: float = 0.0
    whole_segment: bool = False  # a segment without word times, labelled as one (rule 5)


def assign_speakers(
    words: Iterable[Timed], turns: Iterable[SpeakerTurn], *, no_turns_speaker: str | None = NO_TURNS_SPEAKER
) -> list[LabeledWord]:
    """One LabeledWord per word, in input order, with repaired times (rules 1-3)."""
    words = list(words)
    times, timed = _repair_times(words)
    valid = valid_turns(turns)
    if not valid:
        return [LabeledWord(s, e, w.text, no_turns_speaker) for w, (s, e) in zip(words, times, strict=True)]
    sweep = _Sweep(valid)
    votes: list[tuple[str, float] | None] = [None] * len(words)
    previous = None
    for i, (start, end) in enumerate(times):
        if timed[i]:
            votes[i] = sweep.vote(start, end, previous)
            previous = votes[i][0]
    if not any(timed) and words:  # nothing timed: all words sit at 0.0; the turn nearest the start
        votes = [sweep.vote(0.0, 0.0, None)] * len(words)
    _borrow_from_neighbours(votes)
    return [LabeledWord(s, e, w.text, v[0], v[1]) for w, (s, e), v in zip(words, times, votes, strict=True)]


def smooth(
    labeled: Sequence[LabeledWord], *, max_evidence: float = SMOOTH_MAX_EVIDENCE, pause_s: float = SMOOTH_PAUSE_S
) -> list[LabeledWord]:
    """Relabel lone mid-sentence speaker flips (rule 4). Returns a new list; times never change."""
    out = list(labeled)
    for i in range(1, len(out) - 1):
        left, word, right = out[i - 1], out[i], out[i + 1]  # left is already smoothed: X Y X Y -> X X X Y
        if left.speaker != right.speaker or word.speaker == left.speaker or word.whole_segment:
            continue
        if word.evidence >= max_evidence or _own_sentence(left, word, right, pause_s):
            continue
        out[i] = replace(word, speaker=left.speaker)
    return out


def speaker_runs(
    labeled: Iterable[LabeledWord], *, with_words: bool = False, duration: float | None = None
) -> list[dict]:
    """Consecutive words of one speaker as ``{"speaker", "text", "timestamp": [start, end]}``.

    Text is the words' texts joined (Whisper words carry their leading space), stripped. With
    ``with_words`` each run also lists ``"words": [{"text", "timestamp", "speaker"}]``. Times are
    rounded to ms and, given ``duration``, never past it (as the chunks in pipeline/render.py).
    """

    def ts(t: float) -> float:
        return round(t if duration is None else min(t, duration), 3)

    runs: list[dict] = []
    texts: list[list[str]] = []
    for word in labeled:
        if not runs or runs[-1]["speaker"] != word.speaker:
            runs.append({"speaker": word.speaker, "text": "", "timestamp": [ts(word.start), ts(word.end)]})
            texts.append([])
            if with_words:
                runs[-1]["words"] = []
        runs[-1]["timestamp"][1] = ts(word.end)
        texts[-1].append(word.text)
        if with_words and not word.whole_segment:
            detail = {"text": word.text, "timestamp": [ts(word.start), ts(word.end)], "speaker": word.speaker}
            runs[-1]["words"].append(detail)
    for run, parts in zip(runs, texts, strict=True):
        run["text"] = "".join(parts).strip()
    return runs


def lacks_words(segment: Segment) -> bool:
    """A spoken segment that came without word times (rule 5)."""
    return not segment.words and bool(segment.text.strip())


def merge_speakers(
    segments: Sequence[Segment],
    turns: Iterable[SpeakerTurn],
    *,
    with_words: bool = False,
    duration: float | None = None,
    no_turns_speaker: str | None = NO_TURNS_SPEAKER,
    overlaps: Sequence[overlap.Stretch] = (),
) -> list[dict]:
    """The response's ``speakers``: per word and smoothed; a segment without word times goes whole to
    one speaker (rule 5) and is not listed among the words of ``with_words``. Words inside ``overlaps``
    (where the regular diarization hears several speakers) are given by ``overlap.owners``."""
    items: list[Timed] = []
    whole: list[bool] = []
    for segment in segments:
        parts = (segment,) if lacks_words(segment) else (segment.words or ())
        items.extend(parts)
        whole.extend([lacks_words(segment)] * len(parts))
    labeled = assign_speakers(items, turns, no_turns_speaker=no_turns_speaker)
    labeled = [replace(w, whole_segment=True) if is_whole else w for w, is_whole in zip(labeled, whole, strict=True)]
    labeled = overlap.owners(labeled, overlaps)
    return speaker_runs(smooth(labeled), with_words=with_words, duration=duration)


class _Sweep:
    """Turns sorted by start, walked once while word times move forward."""

    def __init__(self, turns: list[SpeakerTurn]):
        self.turns = turns
        self.next = 0  # first turn not yet reached
        self.alive: list[SpeakerTurn] = []  # reached turns that may still overlap a word
        self.latest: SpeakerTurn | None = None  # reached turn with the latest end

    def vote(self, start: float, end: float, previous: str | None) -> tuple[str, float]:
        """(speaker, evidence) for the word [start, end]; start and end never decrease between calls."""
        turns = self.turns
        while self.next < len(turns) and turns[self.next].start <= end:
            turn = turns[self.next]
            self.next += 1
            self.alive.append(turn)
            if self.latest is None or turn.end > self.latest.end:
                self.latest = turn
        alive = self.alive = [t for t in self.alive if t.end >= start]
        if not alive:
            return self._nearest(start, end), 0.0
        if len(alive) == 1:  # the common case: one speaker talking
            turn = alive[0]
            share = (min(end, turn.end) - max(start, turn.start)) / (end - start) if end > start else 0.0
            return turn.speaker, share
        overlap: dict[str, float] = {}
        for turn in alive:  # in start order, so max() below breaks ties by the earlier turn
            overlap[turn.speaker] = overlap.get(turn.speaker, 0.0) + min(end, turn.end) - max(start, turn.start)
        # Rounded to the microsecond so float noise does not beat the tie-break.
        best = max(overlap, key=lambda speaker: (round(overlap[speaker], 6), speaker == previous))
        runner_up = max((v for s, v in overlap.items() if s != best), default=0.0)
        evidence = min(1.0, (overlap[best] - runner_up) / (end - start)) if end > start else 0.0
        return best, evidence

    def _nearest(self, start: float, end: float) -> str:
        before, after = self.latest, self.turns[self.next] if self.next < len(self.turns) else None
        if after is None or (before is not None and start - before.end <= after.start - end):
            return before.speaker
        return after.speaker


def _usable(start: float | None, end: float | None) -> bool:
    if start is None or end is None:
        return False
    return math.isfinite(start) and math.isfinite(end) and end >= start


def _repair_times(words: list[Timed]) -> tuple[list[tuple[float, float]], list[bool]]:
    """Rule 1's times, non-decreasing; and which words had usable times of their own."""
    timed = [_usable(w.start, w.end) for w in words]
    first = next((float(w.start) for w, ok in zip(words, timed, strict=True) if ok), 0.0)
    times: list[tuple[float, float]] = []
    cursor = first  # end of the previous word
    for word, ok in zip(words, timed, strict=True):
        if ok:
            start = max(float(word.start), cursor)
            cursor = max(float(word.end), start)
            times.append((start, cursor))
        else:
            times.append((cursor, cursor))
    return times, timed


def _borrow_from_neighbours(votes: list[tuple[str, float] | None]) -> None:
    """Untimed words take the previous word's speaker (leading ones the next timed word's), evidence 0."""
    carried = next((v for v in votes if v is not None), None)
    for i, vote in enumerate(votes):
        if vote is None:
            votes[i] = (carried[0], 0.0)
        else:
            carried = vote


def valid_turns(turns: Iterable[SpeakerTurn]) -> list[SpeakerTurn]:
    """Turns with finite, ordered times, sorted by start."""
    return sorted((t for t in turns if _usable(t.start, t.end)), key=lambda t: (t.start, t.end))



def _own_sentence(left: LabeledWord, word: LabeledWord, right: LabeledWord, pause_s: float) -> bool:
    if ends_sentence(left.text) or ends_sentence(word.text):
        return True
    return word.start - left.end >= pause_s and right.start - word.end >= pause_s
