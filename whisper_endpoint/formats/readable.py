"""Readable subtitle cues, cut from the words: one speaker a cue, lines that fit, times a viewer can read.

The rules (``SubtitleOptions``; the defaults are Netflix's for English):
- a cue never spans a speaker change (diarized, or a channel), nor a pause of ``LONG_PAUSE_S``;
- a run that does not fit one cue (``max_line_count`` lines of ``max_line_width`` columns, at most
  ``max_words_per_line`` words a line, at most ``max_cue_duration``) is split at a sentence end first,
  then at clause punctuation, then at its longest pause, never inside a word;
- lines are broken as evenly as they can be; a line break falls on a space, or between two East Asian
  wide characters (Japanese and Chinese have no spaces), never before closing punctuation;
- a cue shorter than ``min_cue_duration``, or faster to read than ``MAX_READING_CPS``, takes time from the
  silence after it, then before it (``cue_timing``), never closer than ``MIN_GAP_S`` to its neighbours;
- a cue that still falls short of ``min_cue_duration`` joins its neighbour of the same speaker (the nearer
  one first) where the two fit one cue.

The words come from the speakers' ``words`` (``return_speaker_words``) or the word chunks. Where only
segments or speaker runs are known, a span's time is shared out among its words by their length; so is
the time around a word whose timestamps collapsed to a point.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby

from whisper_endpoint.core.config import SubtitleOptions
from whisper_endpoint.formats.cue_timing import MAX_READING_CPS, MIN_GAP_S  # noqa: F401 (re-exported)
from whisper_endpoint.formats.cue_timing import by_length, given_time, shown_times

LONG_PAUSE_S = 2.0  # a pause this long always ends a cue: no text shown over silence
PHRASE_BREAK_COST = 10  # columns of imbalance a line break inside a run of wide characters is worth
_SENTENCE_END = re.compile(r"[.!?。！？…]['\"”’」』)）]*$")
_CLAUSE_END = re.compile(r"[,;:、，；：—–-]['\"”’」』)）]*$")
_NO_LINE_START = set("、。，．・：；？！）」』】〕〉》”’ー,.!?:;)]}")  # closing punctuation stays on its line


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    text: str  # as Whisper writes it: a leading space before a word of a spaced language
    speaker: str | None = None


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    text: str  # its lines, joined by "\n"
    speaker: str | None = None
    underline: tuple[int, int] | None = None  # highlight_words: the span of ``text`` being spoken


def readable_cues(words: list[Word], options: SubtitleOptions) -> list[Cue]:
    pieces = [piece for run in _runs(words) for piece in _fitted(run, options)]
    laid = [_laid_out(piece, options) for piece in pieces]
    cues = _timed(laid, options)
    while (joined := _joined(laid, cues, options)) is not None:  # until no short cue can join a neighbour
        laid = joined
        cues = _timed(laid, options)
    if options.highlight_words:
        return [shown for piece, cue in cues for shown in _highlighted(piece, cue)]
    return [cue for _, cue in cues]


def _runs(words: list[Word]) -> Iterator[list[Word]]:
    """Consecutive words of one speaker with no long pause between them."""
    run: list[Word] = []
    for word in words:
        if run and (word.speaker != run[-1].speaker or word.start - run[-1].end >= LONG_PAUSE_S):
            yield run
            run = []
        run.append(word)
    if run:
        yield run


def _fitted(run: list[Word], options: SubtitleOptions) -> list[list[Word]]:
    """The run as pieces that each fit one cue: split at the best place, then each side again."""
    if len(run) == 1 or (_duration(run) <= options.max_cue_duration and _line_spans(_text(run), options)):
        return [run]
    cut = _best_cut(run)
    return _fitted(run[:cut], options) + _fitted(run[cut:], options)


def _best_cut(run: list[Word]) -> int:
    """Before which word to split: at a sentence end first, then a clause end (the most even such split),
    else at the longest pause."""
    lengths = [0]
    for word in run:
        lengths.append(lengths[-1] + len(word.text))

    def evenness(cut: int) -> int:
        return -abs(2 * lengths[cut] - lengths[-1])

    def pause(cut: int) -> float:
        return run[cut].start - run[cut - 1].end

    places = [cut for cut in range(1, len(run)) if not _glued(run[cut - 1], run[cut])] or range(1, len(run))
    for pattern in (_SENTENCE_END, _CLAUSE_END):
        cuts = [cut for cut in places if pattern.search(run[cut - 1].text.strip())]
        if cuts:
            return max(cuts, key=lambda cut: (evenness(cut), pause(cut)))
    return max(places, key=lambda cut: (pause(cut), evenness(cut)))


def _glued(before: Word, after: Word) -> bool:
    """Whether two words are pieces of one written word: no space between them, in a spaced script
    (Whisper writes "zo'n" as " zo" and "'n")."""
    first, last = after.text[:1], before.text[-1:]
    return bool(first and last) and not first.isspace() and not (_wide(first) or _wide(last))


def _laid_out(piece: list[Word], options: SubtitleOptions) -> tuple[list[Word], Cue]:
    text = _text(piece)
    spans = _line_spans(text, options) or [(0, len(text))]  # one word too wide for a line keeps its line
    laid = "\n".join(text[start:end] for start, end in spans)
    return piece, Cue(piece[0].start, piece[-1].end, laid, piece[0].speaker)


def _line_spans(text: str, options: SubtitleOptions) -> list[tuple[int, int]] | None:
    """The text's lines as (start, end) spans: as few lines as fit, the widest as narrow as it can be,
    a break inside a run of wide characters only where no punctuation offers one (dynamic programming
    over the break points); None when it cannot fit in ``max_line_count`` lines."""
    if not text or _width(text) > options.max_line_width * options.max_line_count:
        return None  # an early answer for long runs
    columns, words = [0], [0]
    for index, character in enumerate(text):
        columns.append(columns[-1] + _columns(character))
        words.append(words[-1] + (character != " " and (index == 0 or text[index - 1] == " ")))
    # Nodes: where a line may end and the next begin (and whether that break splits a phrase); the
    # text's start and end are the first and the last node.
    nodes = [(0, 0, 0), *_break_points(text), (len(text), len(text), 0)]
    last = len(nodes) - 1

    def width(a: int, b: int) -> int:  # the line from node a's start to node b's end
        return columns[nodes[b][0]] - columns[nodes[a][1]]

    def fits(a: int, b: int) -> bool:
        return options.max_words_per_line is None or words[nodes[b][0]] - words[nodes[a][1]] <= options.max_words_per_line

    # layer[(node, phrase breaks so far)] = (widest line so far, the previous state)
    layers: list[dict] = [{(0, 0): (0, None)}]
    for _ in range(options.max_line_count):
        layer: dict = {}
        for (a, splits), (widest, _previous) in layers[-1].items():
            for b in range(a + 1, len(nodes)):
                if width(a, b) > options.max_line_width:
                    break  # wider still from here on
                if not fits(a, b):
                    continue
                state, candidate = (b, splits + nodes[b][2]), max(widest, width(a, b))
                if state not in layer or candidate < layer[state][0]:
                    layer[state] = (candidate, (a, splits))
        layers.append(layer)
        ends = [state for state in layer if state[0] == last]
        if ends:
            state = min(ends, key=lambda s: layer[s][0] + PHRASE_BREAK_COST * s[1])
            spans = []
            for k in range(len(layers) - 1, 0, -1):
                previous = layers[k][state][1]
                spans.append((nodes[previous[0]][1], nodes[state[0]][0]))
                state = previous
            return spans[::-1]
    return None


def _break_points(text: str) -> list[tuple[int, int, int]]:
    """(end of a line, start of the next, 1 if it splits a phrase) at each place a line may break: a
    space, or between two wide characters unless the second is closing punctuation (a phrase split
    unless the first is punctuation)."""
    points = []
    for index in range(1, len(text)):
        before, after = text[index - 1], text[index]
        if after == " " and before != " ":
            points.append((index, index + 1, 0))
        elif _wide(before) and _wide(after) and after not in _NO_LINE_START:
            points.append((index, index, int(unicodedata.category(before)[0] != "P")))
    return points


def _timed(laid: list[tuple[list[Word], Cue]], options: SubtitleOptions) -> list[tuple[list[Word], Cue]]:
    spoken = [(cue.start, cue.end) for _, cue in laid]
    characters = [len(cue.text.replace("\n", "")) for _, cue in laid]
    times = shown_times(spoken, characters, options)
    return [(piece, Cue(start, end, cue.text, cue.speaker)) for (piece, cue), (start, end) in zip(laid, times)]


def _joined(laid: list[tuple[list[Word], Cue]], timed: list[tuple[list[Word], Cue]],
            options: SubtitleOptions) -> list[tuple[list[Word], Cue]] | None:
    """The pieces with each cue that the silences left under ``min_cue_duration`` joined to its neighbour
    of the same speaker (the nearer first) where the two fit one cue; None when none could be."""
    out: list[tuple[list[Word], Cue]] = []
    index, changed = 0, False
    while index < len(laid):
        piece = laid[index][0]
        sides = []  # (the pause to it, the neighbour's pair in order)
        if timed[index][1].end - timed[index][1].start < options.min_cue_duration - 1e-6:
            if out:
                sides.append((_pause(out[-1][0], piece), "before", out[-1][0], piece))
            if index + 1 < len(laid):
                sides.append((_pause(piece, laid[index + 1][0]), "after", piece, laid[index + 1][0]))
        nearest_first = sorted(sides, key=lambda item: item[0])
        side = next((side for _, side, first, second in nearest_first if _joinable(first, second, options)), None)
        if side == "before":
            out[-1] = _laid_out(out[-1][0] + piece, options)
        elif side == "after":
            out.append(_laid_out(piece + laid[index + 1][0], options))
            index += 1  # the next piece is in this one
        else:
            out.append(laid[index])
        changed = changed or side is not None
        index += 1
    return out if changed else None


def _joinable(first: list[Word], second: list[Word], options: SubtitleOptions) -> bool:
    both = first + second
    return (first[0].speaker == second[0].speaker and _pause(first, second) < LONG_PAUSE_S
            and _duration(both) <= options.max_cue_duration and _line_spans(_text(both), options) is not None)


def _pause(first: list[Word], second: list[Word]) -> float:
    return second[0].start - first[-1].end


def _highlighted(piece: list[Word], cue: Cue) -> Iterator[Cue]:
    """WhisperX's highlight_words: the cue once per word, that word underlined; the plain cue between words."""
    shown = cue.start
    for index, (word, span) in enumerate(zip(piece, _word_spans(piece, cue.text))):
        start = max(word.start, shown)
        end = piece[index + 1].start if index + 1 < len(piece) else word.end
        end = min(max(end, start), cue.end)
        if start > shown:
            yield Cue(shown, start, cue.text, cue.speaker)
        yield Cue(start, end, cue.text, cue.speaker, span)
        shown = end
    if cue.end > shown:
        yield Cue(shown, cue.end, cue.text, cue.speaker)


def _word_spans(piece: list[Word], laid: str) -> list[tuple[int, int]]:
    """Each word's span in the laid-out text. A line break took a space's place, or was put between two
    wide characters: the laid text is the words' text with some spaces turned into, and some line breaks
    added as, "\n"."""
    spans, position = [], 0
    for word in piece:
        token = _one_line(word.text)
        while position < len(laid) and laid[position] in " \n":
            position += 1
        start = position
        for character in token:
            if position < len(laid) and laid[position] == "\n" and character != "\n":
                position += 1  # a break inside a word of wide characters
            position += 1
        spans.append((start, position))
    return spans


def _text(words: list[Word]) -> str:
    return _one_line("".join(word.text for word in words))


def _one_line(text: str) -> str:
    return " ".join(text.split())  # tabs and line breaks in a transcript would break the cue's layout


def _duration(words: list[Word]) -> float:
    return words[-1].end - words[0].start


def _width(text: str) -> int:
    return sum(_columns(character) for character in text)


def _columns(character: str) -> int:
    """Columns on screen: East Asian wide and full-width characters take 2, combining marks 0."""
    return 0 if unicodedata.combining(character) else 2 if _wide(character) else 1


def _wide(character: str) -> bool:
    return unicodedata.east_asian_width(character) in ("W", "F")


def words_of(result: dict) -> list[Word]:
    """The response's words with their speakers: the speakers' words, else the word chunks; where only
    segments or speaker runs are known, each one's time shared out among its words by their length."""
    runs = result.get("speakers") or []
    if runs and all("words" in run for run in runs):
        return [word for run in runs for word in _given_time(
            [_word(chunk, run["speaker"]) for chunk in run["words"] if chunk["text"].strip()])]
    spans = [(item, item.get("speaker")) for item in runs] or [(chunk, None) for chunk in result.get("chunks", [])]
    return _given_time([word for item, speaker in spans for word in _shared_out(_word(item, speaker))])


def _given_time(words: list[Word]) -> list[Word]:
    """The words, those whose timestamps collapsed given a share of their neighbours' time (of the same
    speaker): alone, such a word would make a cue of no duration."""
    out = []
    for _, group in groupby(words, key=lambda word: word.speaker):
        group = list(group)
        times = given_time([(word.start, word.end) for word in group], [len(word.text.strip()) for word in group])
        out += [Word(start, end, word.text, word.speaker) for word, (start, end) in zip(group, times)]
    return out


def _word(chunk: dict, speaker: str | None) -> Word:
    return Word(*span_times(chunk["timestamp"]), chunk["text"], speaker)


def span_times(timestamp) -> tuple[float, float]:
    """A chunk's ``[start, end]`` as seconds: a missing start is 0, a missing end its start."""
    start, end = timestamp
    start = float(start or 0.0)
    return start, float(end if end is not None else start)


_TOKEN = re.compile(r"\s*[^\s\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]+|\s*[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")


def _shared_out(span: Word) -> list[Word]:
    """A span cut into its words (a wide character is a word of its own), its time shared by length."""
    tokens = _TOKEN.findall(span.text)
    if len(tokens) <= 1:
        return [span] if span.text.strip() else []
    times = by_length((span.start, span.end), [len(token.strip()) for token in tokens])
    return [Word(start, end, token, span.speaker) for token, (start, end) in zip(tokens, times)]
