"""Hypothesis properties (#8): the speaker merge on realistic, overlapping and empty turns (extending
tests/test_speaker_merge.py's invariants), and request validation on arbitrary payloads: every input
either parses or raises one of the project's documented errors, never anything else.
"""

from __future__ import annotations

import html
import json
import math
import re

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from whisper_endpoint.adapters.payloads import text_parameters
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.errors import ClientError, InvalidParameterError
from whisper_endpoint.core.types import Segment, SpeakerTurn, Word
from whisper_endpoint.pipeline.request import parse_parameters, parse_request
from whisper_endpoint.speakers.merge import NO_TURNS_SPEAKER, assign_speakers, merge_speakers

LABELS = ["SPEAKER_00", "SPEAKER_01", "SPEAKER_02"]
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- the speaker merge -------------------------------------------------------------------------------


@st.composite
def spoken_words(draw):
    """Words as Whisper gives them: mostly contiguous, increasing times; sometimes a glitch (a word
    starting before the previous one ends, a zero-length word, missing times)."""
    words, t = [], draw(st.floats(0, 5))
    for i in range(draw(st.integers(0, 30))):
        t += draw(st.sampled_from([0.0, 0.0, 0.05, 0.6]))  # pauses
        length = draw(st.sampled_from([0.0, 0.1, 0.3, 0.5]))
        start, end = t, t + length
        glitch = draw(st.sampled_from([None] * 8 + ["overlap", "missing", "nan"]))
        if glitch == "overlap":
            start = max(0.0, start - 0.2)
        elif glitch == "missing":
            start = end = None
        elif glitch == "nan":
            end = math.nan
        words.append(Word(start, end, draw(st.sampled_from([f" w{i}", f" w{i}.", f"w{i}?", "", " "]))))
        t += length
    return words


def turn(start, length, speaker):
    return SpeakerTurn(start, start + length, speaker)


turn_lengths = st.sampled_from([0.0, 0.0, 0.2, 1.0, 3.0, 20.0])  # empty turns included
turns_st = st.lists(st.builds(turn, st.floats(0, 20), turn_lengths, st.sampled_from(LABELS)), max_size=12)


def in_segments(words, cuts):
    """Split the words into consecutive segments at ``cuts`` (indices), as the ASR returns them."""
    bounds = sorted({0, len(words), *[c % (len(words) + 1) for c in cuts]})
    pieces = [words[a:b] for a, b in zip(bounds, bounds[1:])]
    return [Segment(0.0, 1.0, "".join(w.text for w in piece), tuple(piece)) for piece in pieces]


@FAST
@given(spoken_words(), turns_st, st.lists(st.integers(0, 40), max_size=4))
def test_merge_keeps_every_word_once_in_order_forward_in_time_with_diarization_labels(words, turns, cuts):
    runs = merge_speakers(in_segments(words, cuts), turns, with_words=True, duration=60.0)
    flat = [word for run in runs for word in run["words"]]
    assert [w["text"] for w in flat] == [w.text for w in words]  # each ASR word exactly once, in order
    times = [t for w in flat for t in w["timestamp"]]
    assert all(math.isfinite(t) and 0.0 <= t <= 60.0 for t in times)
    assert times == sorted(times)  # never backwards
    allowed = {t.speaker for t in turns} or {NO_TURNS_SPEAKER}
    assert {w["speaker"] for w in flat} <= allowed and {run["speaker"] for run in runs} <= allowed
    assert all(run["words"] and all(w["speaker"] == run["speaker"] for w in run["words"]) for run in runs)


@FAST
@given(spoken_words(), st.lists(st.builds(turn, st.floats(0, 20), turn_lengths, st.just("SPEAKER_07")), min_size=1,
                                max_size=6))
def test_one_speaker_in_the_diarization_labels_every_word(words, turns):
    labeled = assign_speakers(words, turns)
    assert [w.speaker for w in labeled] == ["SPEAKER_07"] * len(words)


@FAST
@given(st.floats(0, 100), st.floats(0.05, 5), st.floats(0, 1), st.floats(0, 1), turns_st)
def test_a_word_inside_a_single_turn_goes_to_it_with_full_evidence(start, length, lead, tail, others):
    """Max overlap: a word that one turn covers and no other turn touches belongs to that turn."""
    word = Word(start, start + length, " word")
    cover = SpeakerTurn(start - lead, start + length + tail, "SPEAKER_09")
    assume(not any(t.start < word.end and t.end > word.start for t in others))
    [labeled] = assign_speakers([word], [*others, cover])
    assert (labeled.speaker, labeled.evidence) == ("SPEAKER_09", 1.0)


@FAST
@given(spoken_words(), st.lists(st.builds(turn, st.just(2.0), st.just(5.0), st.sampled_from(LABELS)), min_size=2,
                                max_size=5))
def test_fully_overlapping_turns_never_crash_and_pick_one_of_them(words, turns):
    labeled = assign_speakers(words, turns)
    assert len(labeled) == len(words) and {w.speaker for w in labeled} <= {t.speaker for t in turns}


# --- request validation ------------------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                         st.text(max_size=30))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
field_names = st.sampled_from(sorted(InferenceConfig.known_fields())) | st.text(max_size=12)
BOUNDS = {"batch_size": (1, 256), "chunk_length_s": (1, 30), "beam_size": (1, 10), "sampling_rate": (1000, 384000)}


def test_a_payload_of_many_wrong_values_gets_a_short_error_naming_the_first():
    """Found by the property below once known_speakers (a list of objects) arrived: every wrong key of
    every item was described, past 2000 characters."""
    speakers = [{f"key{i}" * 30: None for i in range(20)} for _ in range(8)]
    with pytest.raises(InvalidParameterError) as caught:
        parse_parameters({"task": None, "batch_size": None, "known_speakers": speakers})
    assert caught.value.message.startswith("invalid parameters: parameters.task")
    assert "more" in caught.value.message and len(caught.value.message) < 2000


@FAST
@given(st.dictionaries(field_names, json_values, max_size=6))
def test_any_parameters_parse_within_bounds_or_raise_a_named_422(parameters):
    try:
        config, warnings = parse_parameters(parameters)
    except InvalidParameterError as exc:
        assert exc.status == 422 and exc.message.startswith("invalid parameters") and len(exc.message) < 2000
        return
    for name, (low, high) in BOUNDS.items():
        assert low <= getattr(config, name) <= high
    for name in ("num_speakers", "min_speakers", "max_speakers"):
        assert getattr(config, name) is None or 1 <= getattr(config, name) <= 100
    unknown = {str(key) for key in parameters if key not in InferenceConfig.known_fields()}
    assert warnings == [f"ignored unknown parameter {name!r}" for name in sorted(unknown)]


@FAST
@given(st.lists(st.tuples(field_names, st.text(max_size=20)), max_size=6))
def test_query_string_parameters_parse_or_raise_a_named_422(pairs):
    try:
        parse_parameters(text_parameters(pairs))
    except InvalidParameterError as exc:
        assert exc.status == 422


@FAST
@given(st.sampled_from(list(BOUNDS)), st.integers(-(10**6), 10**6))
def test_each_numeric_bound_holds_exactly(name, value):
    low, high = BOUNDS[name]
    try:
        config, _ = parse_parameters({name: value})
    except InvalidParameterError as exc:
        assert not low <= value <= high and name in exc.message
    else:
        assert low <= value <= high and getattr(config, name) == value


arrays = st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=300)
inputs_st = st.one_of(
    st.binary(max_size=600), st.text(max_size=100), json_values,
    st.fixed_dictionaries({"array": arrays | json_values}, optional={"sampling_rate": json_scalars}),
    st.fixed_dictionaries({"raw": st.lists(arrays, max_size=3)}),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs_st, st.one_of(st.none(), st.dictionaries(field_names, json_values, max_size=3), json_values))
def test_any_payload_parses_or_raises_a_documented_client_error(inputs, parameters):
    try:
        request = parse_request({"inputs": inputs, "parameters": parameters}, max_seconds=5.0)
    except ClientError as exc:  # MissingInput, InvalidInput, InvalidParameter, Undecodable, Empty, TooLarge
        assert 400 <= exc.status < 500 and exc.message
        return
    samples = request.audio.samples
    assert len(samples) > 0 and samples.dtype.name == "float32" and request.audio.duration <= 5.0


# --- the web page's downloads (POST /formats/{name}) -------------------------------------------------

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8)
_TIME = (st.sampled_from([None, math.nan, math.inf, -math.inf, -1.0, 0.0, 1e15]) | st.floats()
         | st.integers(-10**20, 10**20) | st.text(max_size=3))
# Mostly the handler's shape with odd values in it (NaN, negative or huge times, blank names), sometimes junk.
_PAIR = st.lists(_TIME, min_size=2, max_size=2)
# Text as people and models write it: line breaks of every kind inside it, blank lines included.
_LINES = st.lists(st.text(max_size=8) | st.sampled_from(["\n", "\r\n", "\r", "\n\n", " \n \n", "\u2028"]),
                  max_size=5).map("".join)
_CHUNK = st.fixed_dictionaries({"text": _LINES, "timestamp": _PAIR},
                               optional={"speaker": st.text(max_size=12) | st.none()})
_TURN = st.fixed_dictionaries({"speaker": st.text(max_size=12), "text": _LINES, "timestamp": _PAIR},
                              optional={"words": _JSON_VALUES})
_JUNK = st.dictionaries(st.sampled_from(["text", "timestamp", "speaker"]), _JSON_VALUES, max_size=3)
_TRANSCRIPTS = st.fixed_dictionaries({"text": st.text(max_size=30)}, optional={
    "chunks": st.lists(st.one_of(_CHUNK, _CHUNK, _CHUNK, _JUNK), max_size=4),
    "speakers": st.lists(st.one_of(_TURN, _TURN, _TURN, _JUNK), max_size=3),
    "segments": st.lists(_CHUNK, max_size=3) | st.none(),
    "extra": _JSON_VALUES})


_BREAK = st.sampled_from(["\n", "\r\n", "\r", "\n\n", " \n \n", "\u2028"])
_BROKEN = st.tuples(st.text(min_size=1, max_size=8), _BREAK, st.text(min_size=1, max_size=8)).map("".join)
_SPAN = st.tuples(st.floats(0, 1e4), st.floats(0, 60)).map(lambda pair: [pair[0], pair[0] + pair[1]])
_NAME = st.text(min_size=1, max_size=12).filter(str.strip)
# Well-formed transcripts (times the schema takes), every text broken over lines, names too.
_WELL_FORMED = st.fixed_dictionaries({"text": _BROKEN}, optional={
    "chunks": st.lists(st.fixed_dictionaries({"text": _BROKEN, "timestamp": _SPAN}), max_size=4),
    "speakers": st.lists(st.fixed_dictionaries({"speaker": _NAME, "text": _BROKEN, "timestamp": _SPAN}),
                         max_size=3)})


@FAST
@given(_TRANSCRIPTS | _WELL_FORMED, st.sampled_from(["txt", "srt", "vtt", "tsv"]),
       st.sampled_from(["readable", "segment"]))
@example({"text": "0\n0", "speakers": [{"speaker": ">", "text": "0\n0", "timestamp": [0.0, 0.0]}]}, "vtt",
         "readable")  # a name that is ">": the VTT voice tag holds "&gt;"
def test_any_body_of_the_formats_route_renders_or_is_rejected_by_its_schema(body, name, mode):
    from pydantic import ValidationError

    from whisper_endpoint import formats
    from whisper_endpoint.formats.readable import words_of
    from whisper_endpoint.serving.formats_api import Transcript

    try:  # as the route reads its body: JSON text (NaN and Infinity included, as Python's json writes them)
        transcript = Transcript.model_validate_json(json.dumps(body))
    except ValidationError:
        return  # the route's 422, naming the field
    result = transcript.model_dump(exclude_none=True)
    options = formats.SubtitleOptions(subtitle_cues=mode)
    rendered = formats.render(result, name, formats.Context(subtitles=options)).body
    assert isinstance(rendered, str)
    cues = formats.cues(result)
    if name == "tsv":  # a header, then one row of 4 cells per cue: no text or name breaks a row
        rows = _lines(rendered)
        assert rows[-1] == "" and len(rows) == len(cues) + 2
        assert all(len(row.split("\t")) == 4 for row in rows[:-1])
    elif name in ("srt", "vtt") and mode == "segment":  # every cue parses back: speaker, words, one line
        texts = _cue_texts(rendered, name)
        assert len(texts) == len(cues) and all(len(lines) == 1 for lines in texts)
        for [line], (_, _, text, speaker) in zip(texts, cues):
            label = (f"[{speaker}] " if name == "srt" else f"<v {speaker}>") if speaker else ""
            assert line.startswith(label) and line[len(label):].split() == text.split(), (line, speaker, text)
    elif name in ("srt", "vtt"):  # readable: every cue parses back, at most 2 lines, every word once, in order
        texts = _cue_texts(rendered, name, raw=True)  # VTT's voice tag read before its entities: a name may hold ">"
        assert all(1 <= len(lines) <= options.max_line_count for lines in texts)
        words = words_of(result)
        shown = []
        for lines in texts:
            speaker = re.match(r"\[(.*?)\] |<v ([^>]*)>", lines[0])
            text = " ".join(lines)[speaker.end() if speaker else 0:]
            shown += (html.unescape(text) if name == "vtt" else text).split()
        # Compared without the spaces: words written without one ("12" "%") share a token on screen.
        assert "".join(shown) == "".join("".join(word.text.split()) for word in words)


_CLOCK = {"srt": r"\d\d:\d\d:\d\d,\d\d\d", "vtt": r"\d\d:\d\d:\d\d\.\d\d\d"}


def _lines(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text)  # the line breaks of SRT and WebVTT readers


def _cue_texts(body: str, name: str, raw: bool = False) -> list[list[str]]:
    """The text lines of each cue (VTT's entities read back unless ``raw``), read as a subtitle reader reads
    the file: cues end at a blank line; a cue is its number (SRT), its timing line, then its text lines."""
    lines = _lines(body)
    if name == "vtt":
        assert lines[:2] == ["WEBVTT", ""]
        lines = lines[2:] or [""]  # no cues: the header alone
    assert lines[-1] == ""
    blocks, block = [], []
    for line in lines[:-1]:
        if line:
            block.append(line)
        else:
            blocks.append(block)
            block = []
    blocks.append(block)
    found = []
    for number, block in enumerate(blocks if block else blocks[:-1], 1):
        if name == "srt":
            assert block[0] == str(number), block
            block = block[1:]
        assert re.fullmatch(f"{_CLOCK[name]} --> {_CLOCK[name]}", block[0]), block
        assert len(block) >= 2 and not any("-->" in line for line in block[1:]), block
        found.append(block[1:] if name == "srt" or raw else [html.unescape(line) for line in block[1:]])
    return found
