"""Readable subtitles: cues cut from the words by the rules of ``SubtitleOptions`` (exact output for fixed
words), each parameter's effect, the same validation on every route, and a real diarized file through the
OpenAI route with the openai SDK (the cues' words are the transcript's words)."""

from __future__ import annotations

import re

import openai
import pytest
from pydantic import ValidationError

from support.paths import AUDIO
from support.audio import decode_reference, encode
from support.serving import live_server
from whisper_endpoint import formats
from whisper_endpoint.core.config import InferenceConfig, SubtitleOptions
from whisper_endpoint.formats.cue_timing import MAX_LEAD_IN_S
from whisper_endpoint.formats.readable import MIN_GAP_S, _width, words_of
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings


def _words(text: str, speaker: str, start: float, step: float = 0.4) -> list[dict]:
    out = []
    for index, word in enumerate(text.split()):
        begin = round(start + index * step, 3)
        out.append({"text": " " + word, "timestamp": [begin, round(begin + step - 0.05, 3)], "speaker": speaker})
    return out


ANN = _words("Good morning, thanks for joining the call. Shall we start with the quarterly numbers "
             "from the last three months?", "Ann", 0.0)
BOB = _words("Sure.", "Bob", 9.0)
DIARIZED = {
    "text": "", "duration": 12.0, "language": "en", "warnings": [], "chunks": ANN + BOB,
    "speakers": [{"speaker": "Ann", "text": "".join(w["text"] for w in ANN).strip(), "timestamp": [0.0, 7.55],
                  "words": ANN},
                 {"speaker": "Bob", "text": "Sure.", "timestamp": [9.0, 9.35], "words": BOB}],
}


def srt(result: dict, **options) -> str:
    return formats.render(result, "srt", formats.Context(subtitles=SubtitleOptions(**options))).body


def vtt(result: dict, **options) -> str:
    return formats.render(result, "vtt", formats.Context(subtitles=SubtitleOptions(**options))).body


def cue_blocks(body: str) -> list[list[str]]:
    return [block.split("\n") for block in body.strip().split("\n\n")]


def seconds(clock: str) -> float:
    hours, minutes, rest = clock.replace(",", ".").split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def times(block: list[str]) -> tuple[float, float]:
    start, end = block[1].split(" --> ")
    return seconds(start), seconds(end)


def test_cues_split_at_sentence_ends_never_across_speakers_with_balanced_lines():
    assert srt(DIARIZED) == (
        "1\n00:00:00,000 --> 00:00:02,717\n[Ann] Good morning, thanks for joining the call.\n\n"
        "2\n00:00:02,800 --> 00:00:07,550\n[Ann] Shall we start with the quarterly\nnumbers from the last three months?\n\n"
        "3\n00:00:09,000 --> 00:00:09,833\n[Bob] Sure.\n")


def test_vtt_cues_and_highlighted_words():
    assert vtt(DIARIZED).splitlines()[2:4] == ["00:00:00.000 --> 00:00:02.717",
                                               "<v Ann>Good morning, thanks for joining the call."]
    highlighted = cue_blocks(vtt({**DIARIZED, "speakers": DIARIZED["speakers"][1:]}, highlight_words=True))[1:]
    # "Sure." spoken 9.0-9.35, then the plain cue until its end (the minimum duration).
    assert highlighted == [["00:00:09.000 --> 00:00:09.350", "<v Bob><u>Sure.</u>"],
                           ["00:00:09.350 --> 00:00:09.833", "<v Bob>Sure."]]
    first = cue_blocks(srt(DIARIZED, highlight_words=True))
    assert [block[2] for block in first[:2]] == ["[Ann] <u>Good</u> morning, thanks for joining the call.",
                                                 "[Ann] Good <u>morning,</u> thanks for joining the call."]
    underlined = [re.search(r"<u>(.*?)</u>", "\n".join(block[2:]), re.S).group(1) for block in first if "<u>" in
                  "\n".join(block[2:])]
    assert underlined == [w["text"].strip() for w in ANN + BOB]  # every word once, in order


def test_one_cue_per_segment_is_one_parameter_away():
    assert srt(DIARIZED, subtitle_cues="segment") == (
        "1\n00:00:00,000 --> 00:00:07,550\n[Ann] " + DIARIZED["speakers"][0]["text"] + "\n\n"
        "2\n00:00:09,000 --> 00:00:09,350\n[Bob] Sure.\n")
    plain = {"speakers": [], "chunks": [{"text": " Hello there.", "timestamp": [0.0, 1.25]},
                                        {"text": " General Kenobi.", "timestamp": [1.5, 3.5]}]}
    assert srt(plain, subtitle_cues="segment") == ("1\n00:00:00,000 --> 00:00:01,250\nHello there.\n\n"
                                                   "2\n00:00:01,500 --> 00:00:03,500\nGeneral Kenobi.\n")
    # Readable cues from segments: the segment's time shared out among its words, the two sentences in one cue.
    assert srt(plain) == "1\n00:00:00,000 --> 00:00:03,500\nHello there. General Kenobi.\n"


@pytest.mark.parametrize("options", [
    {"max_line_width": 20}, {"max_line_width": 12, "max_line_count": 3}, {"max_line_count": 1},
    {"max_words_per_line": 3}, {"max_cue_duration": 2.0}, {"min_cue_duration": 2.5},
])
def test_each_cue_keeps_the_rules_it_was_given(options):
    chosen = SubtitleOptions(**options)
    blocks = cue_blocks(srt(DIARIZED, **options))
    spoken = [w["text"].strip() for w in ANN + BOB]
    shown = [word for block in blocks for line in block[2:] for word in line.split() if not word.startswith("[")]
    assert shown == spoken  # no word lost, none repeated
    for index, block in enumerate(blocks):
        lines = [re.sub(r"^\[\w+\] ", "", line) for line in block[2:]]
        start, end = times(block)
        assert len(lines) <= chosen.max_line_count
        assert all(_width(line) <= chosen.max_line_width for line in lines)
        if chosen.max_words_per_line:
            assert all(len(line.split()) <= chosen.max_words_per_line for line in lines)
        assert end - start <= chosen.max_cue_duration + 1e-6
        if index + 1 < len(blocks):
            assert times(blocks[index + 1])[0] - end >= MIN_GAP_S - 1e-3  # two frames between cues
    if "min_cue_duration" in options:  # "Sure." stays on for 2.5 s: nothing follows it
        assert times(blocks[-1]) == (9.0, 11.5)
    if "max_line_count" in options and options["max_line_count"] == 1:
        assert len(blocks) > len(cue_blocks(srt(DIARIZED)))


def test_a_short_cue_stays_on_into_the_silence_but_never_over_the_next():
    words = _words("Yes.", "Ann", 0.0) + _words("No, I do not think so at all.", "Bob", 0.5)
    result = {"speakers": [{"speaker": "Ann", "words": words[:1]}, {"speaker": "Bob", "words": words[1:]}]}
    first, second = cue_blocks(srt(result))
    assert times(first) == (0.0, round(0.5 - MIN_GAP_S, 3)) and times(second)[0] == 0.5


def _turns(*turns: list[dict]) -> dict:
    return {"speakers": [{"speaker": words[0]["speaker"], "words": words} for words in turns]}


def test_a_cue_followed_at_once_takes_the_silence_before_it():
    # Issue 60: such cues flashed by. "Yes." (0.35 s) is followed by Ann at once; the 1 s of silence
    # before it gives it its minimum.
    blocks = cue_blocks(srt(_turns(_words("We could take the train.", "Ann", 0.0), _words("Yes.", "Bob", 3.0),
                                   _words("Or we could drive there.", "Ann", 3.35))))
    assert [times(block) for block in blocks] == [(0.0, 1.95), (2.434, 3.267), (3.35, 5.3)]
    # 42 characters want 2.1 s: they take the silence before them, up to MAX_LEAD_IN_S.
    fast = cue_blocks(srt(_turns(_words("Unquestionably, categorically, absolutely.", "Ann", 5.0, 0.3),
                                 _words("Right.", "Bob", 5.9))))
    assert times(fast[0]) == (5.0 - MAX_LEAD_IN_S, round(5.9 - MIN_GAP_S, 3))


def test_a_silence_goes_first_to_the_cue_it_brings_within_the_rules():
    # Both cues want the 0.37 s between them: Ann's cue reads at 20 characters a second with 0.3 s of
    # it; Bob's 43 characters spoken in 1.1 s read too fast whatever it gets, so it has what is left.
    blocks = cue_blocks(srt(_turns(_words("Absolutely wonderful.", "Ann", 0.0),
                                   _words("Indubitably, unquestionably, categorically.", "Bob", 1.2),
                                   _words("Fine.", "Ann", 2.4))))
    assert [times(block) for block in blocks[:2]] == [(0.0, 1.05), (round(1.05 + MIN_GAP_S, 3), 2.317)]


def test_a_short_cue_with_no_room_joins_its_neighbour_of_the_same_speaker():
    # Split at its sentence end, "No." would last 0.32 s between Bob and the rest of Ann's turn.
    blocks = cue_blocks(srt(_turns(_words("Shall we go?", "Bob", 0.0), _words(
        "No. I would much rather stay at home this evening, because it is cold and it is raining outside.",
        "Ann", 1.2))))
    assert [block[2:] for block in blocks[1:]] == [["[Ann] No. I would much rather", "stay at home this evening,"],
                                                  ["[Ann] because it is cold and", "it is raining outside."]]
    assert times(blocks[1]) == (1.2, 5.117)


def test_a_cue_never_splits_a_written_word():
    # Whisper writes "zo'n" as " zo" and "'n"; the run's longest pause falls between the two.
    words = _words("Zulke grote vissen hebben niet het recht om zo", "Ann", 0.0, 0.3)
    words += [{"text": "'n", "timestamp": [3.2, 3.3], "speaker": "Ann"},
              *_words("vlucht hetzelfde water te drinken als wij.", "Ann", 3.3, 0.3)]
    assert [block[2:] for block in cue_blocks(srt(_turns(words)))] == [
        ["[Ann] Zulke grote vissen hebben niet het recht"],
        ["[Ann] om zo'n vlucht hetzelfde", "water te drinken als wij."]]


def test_words_whose_timestamps_collapsed_share_their_neighbours_time():
    words = [{"text": " we", "timestamp": [1.0, 1.2]}, {"text": " can", "timestamp": [1.2, 1.2]},
             {"text": " go", "timestamp": [1.2, 1.6]}]
    shared = [(1.0, 1.171, " we"), (1.171, 1.429, " can"), (1.429, 1.6, " go")]  # 1.0-1.6 by length: 2, 3, 2
    assert [(w.start, w.end, w.text) for w in words_of({"speakers": [{"speaker": "A", "words": words}]})] == shared
    assert [(w.start, w.end, w.text) for w in words_of({"chunks": words})] == shared
    alone = words_of({"speakers": [{"speaker": "A", "words": words[:1]}, {"speaker": "B", "words": words[1:2]}]})
    assert (alone[1].start, alone[1].end) == (1.2, 1.2)  # no word of its speaker beside it: nothing to share


def test_lines_are_as_even_as_the_breaks_allow():
    text = "one two three four five six seven eight nine ten eleven twelve"  # 63 columns: two lines
    cue = cue_blocks(srt({"speakers": [], "chunks": [{"text": " " + text, "timestamp": [0.0, 4.0]}]}))[0]
    assert cue[2:] == ["one two three four five six seven", "eight nine ten eleven twelve"]  # 33 and 29
    cue = cue_blocks(srt({"speakers": [], "chunks": [{"text": " " + text, "timestamp": [0.0, 4.0]}]},
                         max_line_width=25, max_line_count=3))[0]
    assert cue[2:] == ["one two three four", "five six seven eight", "nine ten eleven twelve"]


def test_japanese_lines_break_at_punctuation_and_wide_characters_count_two_columns():
    text = "おはようございます。今日の会議を始めましょう。はい、まず先月の売上について報告します。"
    chunks = [{"text": c, "timestamp": [i * 0.15, i * 0.15 + 0.14]} for i, c in enumerate(text)]
    blocks = cue_blocks(srt({"speakers": [], "chunks": chunks}))
    assert [block[2:] for block in blocks] == [["おはようございます。", "今日の会議を始めましょう。"],
                                              ["はい、まず先月の売上について報告します。"]]
    assert all(_width(line) <= 42 for block in blocks for line in block[2:])


def test_words_of_prefers_the_speakers_words_and_shares_out_segment_times():
    assert [w.speaker for w in words_of(DIARIZED)] == ["Ann"] * len(ANN) + ["Bob"]
    shared = words_of({"chunks": [{"text": " ab cd", "timestamp": [1.0, 2.0]}]})
    assert [(w.start, w.end, w.text) for w in shared] == [(1.0, 1.5, " ab"), (1.5, 2.0, " cd")]


@pytest.mark.parametrize("bad, name", [
    ({"max_line_width": 5}, "max_line_width"), ({"max_line_count": 0}, "max_line_count"),
    ({"max_words_per_line": 0}, "max_words_per_line"), ({"max_cue_duration": "nan"}, "max_cue_duration"),
    ({"min_cue_duration": 8, "max_cue_duration": 7}, "min_cue_duration"), ({"highlight_words": "maybe"},
                                                                          "highlight_words"),
    ({"subtitle_cues": "lines"}, "subtitle_cues"),
])
def test_bad_values_name_the_parameter(bad, name):
    with pytest.raises(ValidationError, match=name):
        InferenceConfig.model_validate(bad)


@pytest.fixture(scope="module")
def diarizing_client(diarizing_handler):
    with live_server(create_app(ServerSettings(), handler=diarizing_handler)) as server:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0), server.url


@pytest.fixture(scope="module")
def two_voices() -> tuple[str, bytes]:
    """The meeting's first 16 s: three turns of two voices, two of them several sentences long."""
    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: 16 * 16000]
    return "meeting.flac", encode(samples, 16000, "flac", "flac")


def test_openai_route_gives_readable_diarized_subtitles_with_every_word(diarizing_client, two_voices):
    client, _ = diarizing_client
    audio = two_voices
    body = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="srt",
                                              extra_body={"max_line_width": 32})
    diarized = client.audio.transcriptions.create(model="whisper-1", file=audio, response_format="diarized_json")
    blocks = cue_blocks(body)
    labels = [re.match(r"\[(\w+)\] ", block[2]).group(1) for block in blocks]
    shown = [word for block in blocks for line in block[2:] for word in re.sub(r"^\[\w+\] ", "", line).split()]
    assert shown == diarized.text.split()  # the cues' words are the transcript's words
    assert set(labels) == {segment.speaker for segment in diarized.segments} and len(set(labels)) >= 2
    assert len(blocks) > len(diarized.segments)  # turns of several sentences became several cues
    for block in blocks:
        lines = [re.sub(r"^\[\w+\] ", "", line) for line in block[2:]]
        start, end = times(block)
        assert len(lines) <= 2 and all(len(line) <= 32 for line in lines) and end - start <= 7.0
        # The turn it overlaps most (a cue may start in the silence before its turn: issue 60).
        turn = max(diarized.segments, key=lambda s: min(end, s.end) - max(start, s.start))
        assert turn.speaker == re.match(r"\[(\w+)\] ", block[2]).group(1)  # the cue's speaker is its turn's


def test_bad_subtitle_value_is_a_422_naming_it(diarizing_client):
    client, url = diarizing_client
    import requests

    audio = (AUDIO / "clips" / "asterisk_all-circuits-busy-now.flac").read_bytes()
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.audio.transcriptions.create(model="whisper-1", file=("a.flac", audio), response_format="srt",
                                           extra_body={"max_line_count": "0"})
    assert "max_line_count" in str(caught.value)
    reply = requests.post(f"{url}/formats/srt?max_line_width=3", json=DIARIZED, timeout=10)
    assert reply.status_code == 422 and "max_line_width" in reply.text
    reply = requests.post(f"{url}/formats/srt?max_line_width=20", json=DIARIZED, timeout=10)
    assert reply.status_code == 200 and reply.text == srt(DIARIZED, max_line_width=20)
