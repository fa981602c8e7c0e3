"""The word/speaker merge: hand-made cases for each rule, the reference handler's failures, invariants."""

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from whisper_endpoint.core.types import Segment, SpeakerTurn, Word
from whisper_endpoint.formats.tables import to_rttm
from whisper_endpoint.speakers.merge import (
    NO_TURNS_SPEAKER,
    LabeledWord,
    assign_speakers,
    merge_speakers,
    smooth,
    speaker_runs,
)

NAN = float("nan")


def segments_by_speaker(segments, turns) -> list[dict]:
    """The fallback without word times: each segment whole to its max-overlap speaker, nothing split."""
    return speaker_runs(assign_speakers(segments, turns))


def words_from(*spec):
    """words_from((0, 0.4, " Hello"), ...) -> [Word]"""
    return [Word(start, end, text) for start, end, text in spec]


def turns_from(*spec):
    return [SpeakerTurn(start, end, speaker) for start, end, speaker in spec]


def labels(labeled):
    return [word.speaker for word in labeled]


def sentence(start, text, step=0.3):
    """Contiguous words of `step` seconds from `start`, one per whitespace-separated token."""
    return [Word(start + i * step, start + (i + 1) * step, " " + token) for i, token in enumerate(text.split())]


# --- assignment -------------------------------------------------------------------------------


def test_word_inside_one_turn_gets_its_speaker():
    words = words_from((0.1, 0.4, " Hi"), (1.1, 1.5, " there"))
    turns = turns_from((1.0, 2.0, "B"), (0.0, 0.9, "A"))  # unsorted on purpose
    assert labels(assign_speakers(words, turns)) == ["A", "B"]


def test_gap_words_go_to_the_nearest_turn():
    words = words_from((1.2, 1.5, " near-A"), (2.6, 2.9, " near-B"), (9.0, 9.5, " after-all"))
    turns = turns_from((0.0, 1.0, "A"), (3.0, 4.0, "B"))
    labeled = assign_speakers(words, turns)
    assert labels(labeled) == ["A", "B", "B"]
    assert all(word.evidence == 0.0 for word in labeled)


def test_max_overlap_wins_and_one_speakers_turns_add_up():
    word = words_from((1.0, 2.0, " word"))
    assert labels(assign_speakers(word, turns_from((0.0, 1.3, "A"), (1.2, 3.0, "B")))) == ["B"]
    # A: 0.3 + 0.3 = 0.6 beats B's 0.4 (overlapping turns vote with their overlap).
    split_a = turns_from((0.5, 1.3, "A"), (1.7, 2.5, "A"), (1.3, 1.7, "B"))
    assert labels(assign_speakers(word, split_a)) == ["A"]


def test_overlapping_speech_tie_keeps_the_current_speaker():
    words = sentence(0.0, "so as I was saying")
    # B starts talking over A's third word and covers the rest of them as fully as A's second turn
    # does: ties, which the current speaker keeps (not the turn that started first).
    turns = turns_from((0.0, 0.55, "A"), (0.5, 1.5, "B"), (0.6, 1.5, "A"))
    assert labels(assign_speakers(words, turns)) == ["A"] * 5


def test_evidence_measures_the_margin_over_the_runner_up():
    word = words_from((0.0, 1.0, " x"))
    (alone,) = assign_speakers(word, turns_from((0.0, 1.0, "A")))
    (contested,) = assign_speakers(word, turns_from((0.0, 0.7, "A"), (0.6, 1.0, "B")))
    assert alone.evidence == 1.0
    assert math.isclose(contested.evidence, 0.3)


# --- smoothing --------------------------------------------------------------------------------


def test_single_word_flip_inside_a_sentence_is_smoothed():
    words = sentence(0.0, "we should go to the store today.")
    the = words[4]
    # A diarization blip for B covers a little of " the" and none of A's turns do.
    turns = turns_from((0.0, the.start - 0.05, "A"), (the.start + 0.1, the.start + 0.2, "B"),
                       (the.end + 0.05, 3.0, "A"))
    raw = assign_speakers(words, turns)
    assert labels(raw)[4] == "B"
    assert labels(smooth(raw)) == ["A"] * len(words)


def test_lone_word_the_diarization_is_sure_of_is_kept():
    words = sentence(0.0, "we should go to the store today.")
    the = words[4]
    turns = turns_from((0.0, the.start, "A"), (the.start, the.end, "B"), (the.end, 3.0, "A"))
    assert labels(smooth(assign_speakers(words, turns)))[4] == "B"


def test_one_word_interjection_that_is_its_own_sentence_is_kept():
    words = words_from((0.0, 0.5, " Are"), (0.5, 0.9, " you"), (0.9, 1.4, " ready?"), (1.5, 1.9, " Yes."),
                       (2.0, 2.4, " Then"), (2.4, 2.8, " go."))
    # Weak evidence for B: its turn covers only part of " Yes.".
    turns = turns_from((0.0, 1.45, "A"), (1.6, 1.75, "B"), (1.95, 3.0, "A"))
    labeled = smooth(assign_speakers(words, turns))
    assert labels(labeled) == ["A", "A", "A", "B", "A", "A"]
    assert [run["text"] for run in speaker_runs(labeled)] == ["Are you ready?", "Yes.", "Then go."]


def test_unpunctuated_interjection_between_pauses_is_kept():
    words = words_from((0.0, 0.5, " and"), (0.5, 1.0, " then"), (1.8, 2.1, " yeah"), (3.0, 3.4, " we"),
                       (3.4, 3.8, " left"))
    turns = turns_from((0.0, 1.0, "A"), (1.9, 2.0, "B"), (3.0, 4.0, "A"))
    assert labels(smooth(assign_speakers(words, turns))) == ["A", "A", "B", "A", "A"]


def test_alternating_flips_smooth_left_to_right():
    words = [LabeledWord(i * 0.3, (i + 1) * 0.3, " w", speaker) for i, speaker in enumerate("ABABA")]
    assert labels(smooth(words)) == ["A"] * 5


def test_smooth_changes_labels_only():
    words = sentence(0.0, "one two three")
    raw = assign_speakers(words, turns_from((0.0, 0.3, "A"), (0.35, 0.5, "B"), (0.6, 1.0, "A")))
    smoothed = smooth(raw)
    assert [(w.start, w.end, w.text) for w in smoothed] == [(w.start, w.end, w.text) for w in raw]


# --- degenerate inputs ------------------------------------------------------------------------


def test_no_turns_gives_every_word_the_documented_label():
    words = sentence(0.0, "nobody was found")
    assert labels(assign_speakers(words, [])) == [NO_TURNS_SPEAKER] * 3
    assert labels(assign_speakers(words, [], no_turns_speaker=None)) == [None] * 3
    invalid = turns_from((NAN, 1.0, "A"), (2.0, 1.0, "B"))  # ignored, so the same as none
    assert merge_speakers([Segment(0.0, 0.9, " nobody was found", tuple(words))], invalid) == [
        {"speaker": NO_TURNS_SPEAKER, "text": "nobody was found", "timestamp": [0.0, 0.9]}
    ]


def test_no_words():
    turns = turns_from((0.0, 1.0, "A"))
    assert assign_speakers([], turns) == []
    assert smooth([]) == []
    assert speaker_runs([]) == []
    assert merge_speakers([], turns) == []
    assert segments_by_speaker([], turns) == []


def test_one_speaker_is_one_run():
    words = sentence(0.0, "just me talking here.")
    runs = merge_speakers([Segment(0.0, 1.2, " just me talking here.", tuple(words))], turns_from((0.1, 1.0, "A")))
    assert runs == [{"speaker": "A", "text": "just me talking here.", "timestamp": [0.0, 1.2]}]


def test_words_without_usable_times_borrow_from_their_neighbour():
    words = [Word(None, None, " lead"), Word(1.0, 1.5, " one"), Word(NAN, 2.0, " nan"), Word(2.5, 2.2, " backwards"),
             Word(3.0, 3.5, " two"), Word(4.0, None, " tail")]
    turns = turns_from((0.0, 2.6, "A"), (2.6, 5.0, "B"))
    labeled = assign_speakers(words, turns)
    assert labels(labeled) == ["A", "A", "A", "A", "B", "B"]
    assert [(w.start, w.end) for w in labeled] == [(1.0, 1.0), (1.0, 1.5), (1.5, 1.5), (1.5, 1.5), (3.0, 3.5),
                                                  (3.5, 3.5)]
    # A borrowed label is not evidence: the untimed words never block smoothing.
    assert [w.evidence for w in labeled] == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]


def test_no_word_has_times_then_the_turn_nearest_the_start_speaks():
    words = [Word(None, None, " a"), Word(NAN, NAN, " b")]
    assert labels(assign_speakers(words, turns_from((5.0, 6.0, "B"), (2.0, 3.0, "A")))) == ["A", "A"]


def test_times_never_go_backwards():
    words = words_from((0.0, 1.0, " a"), (0.8, 1.5, " b"), (0.2, 0.4, " c"), (2.0, 2.5, " d"))
    labeled = assign_speakers(words, turns_from((0.0, 3.0, "A")))
    assert [(w.start, w.end) for w in labeled] == [(0.0, 1.0), (1.0, 1.5), (1.5, 1.5), (2.0, 2.5)]


def test_zero_length_words_and_turns():
    words = words_from((1.0, 1.0, " point"), (2.0, 2.0, " edge"))
    turns = turns_from((0.5, 1.5, "A"), (2.0, 2.0, "B"), (2.5, 3.0, "C"))
    assert labels(assign_speakers(words, turns)) == ["A", "B"]


# --- runs, chunks split at speaker changes ----------------------------------------------------


def test_a_chunk_spanning_a_speaker_change_is_split_there():
    words = sentence(0.0, "Hello there. How are you?", step=0.4)
    segment = Segment(0.0, 2.0, " Hello there. How are you?", tuple(words))
    turns = turns_from((0.0, 0.85, "SPEAKER_00"), (0.85, 2.2, "SPEAKER_01"))
    assert merge_speakers([segment], turns) == [
        {"speaker": "SPEAKER_00", "text": "Hello there.", "timestamp": [0.0, 0.8]},
        {"speaker": "SPEAKER_01", "text": "How are you?", "timestamp": [0.8, 2.0]},
    ]


def test_runs_list_their_words_when_asked_and_respect_the_duration():
    words = words_from((0.0, 0.5, " Hi."), (0.6, 1.2, " Hello."))
    runs = speaker_runs(assign_speakers(words, turns_from((0.0, 0.55, "A"), (0.55, 1.3, "B"))),
                        with_words=True, duration=1.0)
    assert runs == [
        {"speaker": "A", "text": "Hi.", "timestamp": [0.0, 0.5],
         "words": [{"text": " Hi.", "timestamp": [0.0, 0.5], "speaker": "A"}]},
        {"speaker": "B", "text": "Hello.", "timestamp": [0.6, 1.0],
         "words": [{"text": " Hello.", "timestamp": [0.6, 1.0], "speaker": "B"}]},
    ]


def test_japanese_words_join_without_spaces():
    words = words_from((0.0, 0.3, "こんにちは"), (0.3, 0.5, "。"), (0.6, 0.9, "はい"), (0.9, 1.0, "。"))
    runs = speaker_runs(assign_speakers(words, turns_from((0.0, 0.55, "A"), (0.55, 1.0, "B"))))
    assert [run["text"] for run in runs] == ["こんにちは。", "はい。"]


def test_segment_fallback_assigns_whole_segments_by_max_overlap():
    segments = [Segment(0.0, 2.0, " First part."), Segment(2.0, 4.0, " Second part."), Segment(4.0, 5.0, " Third.")]
    turns = turns_from((0.0, 2.5, "A"), (2.5, 5.0, "B"))  # B has more of the second segment
    assert segments_by_speaker(segments, turns) == [
        {"speaker": "A", "text": "First part.", "timestamp": [0.0, 2.0]},
        {"speaker": "B", "text": "Second part. Third.", "timestamp": [2.0, 5.0]},
    ]
    # merge_speakers falls back by itself when a spoken segment has no words.
    assert merge_speakers(segments, turns) == segments_by_speaker(segments, turns)


# --- the reference handler's failures (whole chunks matched by nearest turn END) --------------


def test_short_interjection_does_not_shift_later_labels():
    a1 = sentence(0.0, "I think we should ship on Monday.")
    yeah = [Word(2.3, 2.7, " Yeah.")]
    a2 = sentence(2.9, "And then fix the docs after that.")
    b3 = sentence(5.2, "Sounds good to me.")
    turns = turns_from((0.0, 2.2, "A"), (2.25, 2.75, "B"), (2.8, 5.0, "A"), (5.1, 6.5, "B"))
    runs = speaker_runs(smooth(assign_speakers(a1 + yeah + a2 + b3, turns)))
    assert [(run["speaker"], run["text"]) for run in runs] == [
        ("A", "I think we should ship on Monday."),
        ("B", "Yeah."),
        ("A", "And then fix the docs after that."),
        ("B", "Sounds good to me."),
    ]


def test_trailing_words_after_the_last_turn_are_kept():
    words = sentence(0.0, "one two three four five six")  # to 1.8 s; diarization stops at 1.0 s
    runs = merge_speakers([Segment(0.0, 1.8, " one two three four five six", tuple(words))],
                          turns_from((0.0, 0.5, "A"), (0.5, 1.0, "B")))
    assert "".join(run["text"] for run in runs).replace(" ", "") == "onetwothreefourfivesix"
    assert runs[-1]["speaker"] == "B" and runs[-1]["timestamp"][1] == 1.8


# --- RTTM -------------------------------------------------------------------------------------


def test_to_rttm():
    turns = turns_from((2.5, 4.0, "SPEAKER_01"), (0.0, 2.25, "SPEAKER_00"), (NAN, 1.0, "X"))
    assert to_rttm(turns, "meeting 1") == (
        "SPEAKER meeting_1 1 0.000 2.250 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
        "SPEAKER meeting_1 1 2.500 1.500 <NA> <NA> SPEAKER_01 <NA> <NA>\n"
    )
    assert to_rttm([], "x") == ""


# --- invariants -------------------------------------------------------------------------------

times = st.floats(0, 600, allow_nan=False)
word_times = st.one_of(times, times, times, st.none(), st.just(NAN))
speakers = st.sampled_from(["SPEAKER_00", "SPEAKER_01", "SPEAKER_02", "SPEAKER_03"])
words_st = st.lists(st.builds(Word, word_times, word_times, st.sampled_from([" a", " b.", " c?", "d", ""])),
                    max_size=40)
valid_turn = st.builds(lambda start, length, speaker: SpeakerTurn(start, start + length, speaker),
                       times, st.one_of(st.just(0.0), st.floats(0, 60)), speakers)
any_turn = st.builds(SpeakerTurn, word_times, word_times, speakers)  # may be invalid: NaN, None, end < start
turns_st = st.lists(st.one_of(valid_turn, valid_turn, valid_turn, any_turn), max_size=15)


def _valid(turn):
    start, end = turn.start, turn.end
    return start is not None and end is not None and math.isfinite(start) and math.isfinite(end) and end >= start


def _allowed(turns):
    return {t.speaker for t in turns if _valid(t)} or {NO_TURNS_SPEAKER}


@settings(max_examples=150, deadline=None)
@given(words_st, turns_st)
def test_every_word_once_in_order_with_monotone_times_and_known_labels(words, turns):
    for labeled in (assign_speakers(words, turns), smooth(assign_speakers(words, turns))):
        assert [w.text for w in labeled] == [w.text for w in words]
        flat = [t for w in labeled for t in (w.start, w.end)]
        assert all(math.isfinite(t) for t in flat)
        assert flat == sorted(flat)
        assert {w.speaker for w in labeled} <= _allowed(turns)
        assert all(0.0 <= w.evidence <= 1.0 for w in labeled)
        runs = speaker_runs(labeled, with_words=True)
        assert [d["text"] for run in runs for d in run["words"]] == [w.text for w in words]
        assert all(a["speaker"] != b["speaker"] for a, b in zip(runs, runs[1:], strict=False))
        run_times = [t for run in runs for t in run["timestamp"]]
        assert run_times == sorted(run_times)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(words_st, st.sampled_from([" one", " two.", ""]), st.booleans()), max_size=6), turns_st)
def test_merge_and_fallback_never_crash_and_keep_all_text(parts, turns):
    segments = [Segment(0.0, 1.0, text if not with_words else "".join(w.text for w in words),
                        tuple(words) if with_words else None) for words, text, with_words in parts]
    for runs in (merge_speakers(segments, turns, with_words=True), segments_by_speaker(segments, turns)):
        assert {run["speaker"] for run in runs} <= _allowed(turns)
        joined = "".join(seg.text for seg in segments).replace(" ", "")
        assert "".join(run["text"] for run in runs).replace(" ", "") == joined


@settings(max_examples=100, deadline=None)
@given(turns_st)
def test_rttm_has_one_line_per_valid_turn(turns):
    text = to_rttm(turns, "file")
    assert len(text.splitlines()) == sum(map(_valid, turns))
    assert all(len(line.split()) == 10 for line in text.splitlines())


def test_scale_200k_words_in_one_pass():
    # ~22 h of speech in 0.3-0.36 s words, ~10k turns (consecutive ones overlap a little), unsorted.
    words = [Word(i * 0.4, i * 0.4 + 0.3 + (i % 3) * 0.03, " w." if i % 7 == 6 else " w") for i in range(200_000)]
    rng = random.Random(0)
    turns, start, k = [], 0.0, 0
    while start < words[-1].end:
        length = rng.uniform(1.0, 15.0)
        turns.append(SpeakerTurn(start, start + length, f"SPEAKER_0{k % 4}"))
        start, k = start + length - rng.uniform(0.0, 0.5), k + 1
    rng.shuffle(turns)
    runs = merge_speakers([Segment(0.0, words[-1].end, "", tuple(words))], turns)
    assert sum(run["text"].count("w") for run in runs) == len(words)
    assert runs[-1]["timestamp"][1] == round(words[-1].end, 3)


def test_20k_words_two_hours_each_word_to_its_true_speaker():
    """A 2-hour meeting's worth of words (~20k) with a known speaker per word: turns of 1-40 words by
    4 speakers, pauses between turns, words wholly inside their turn. Every word must come back once,
    in order, with the speaker of the turn that holds it, and the runs must be exactly the turns."""
    rng = random.Random(20_000)
    words, turns, expected, t, previous = [], [], [], 0.0, None
    while len(words) < 20_000:
        speaker = rng.choice([s for s in ("SPEAKER_00", "SPEAKER_01", "SPEAKER_02", "SPEAKER_03") if s != previous])
        count, start = rng.randint(1, 40), t
        group = []
        for i in range(count):
            text = f" {speaker[-1]}{len(words) + len(group)}" + ("." if i == count - 1 else "")
            group.append(Word(t, t + rng.uniform(0.1, 0.5), text))
            t = group[-1].end + rng.uniform(0.0, 0.2)
        turns.append(SpeakerTurn(start - 0.05, group[-1].end + 0.05, speaker))
        words += group
        expected.append((speaker, "".join(w.text for w in group)))
        previous, t = speaker, t + rng.uniform(0.3, 1.5)
    rng.shuffle(turns)
    runs = merge_speakers([Segment(0.0, words[-1].end, "", tuple(words))], turns, with_words=True)
    assert [(run["speaker"], run["text"]) for run in runs] == [(s, text.strip()) for s, text in expected]
    returned = [w for run in runs for w in run["words"]]
    assert len(returned) == len(words)
    assert [w["text"] for w in returned] == [w.text for w in words]


# --- a segment without word times (a real transcript and the meeting's true turns) ---------------


def test_a_segment_without_word_times_falls_back_alone(tiny_handler):
    from dataclasses import replace

    from support.paths import AUDIO
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import InferenceConfig

    meeting = AUDIO / "dialogues" / "flite_meeting.flac"
    samples = decode_file(meeting.read_bytes(), max_seconds=60).samples
    segments = tiny_handler.asr.transcribe(samples, InferenceConfig(return_timestamps="word")).segments
    turns = [turns_from((float(f[3]), float(f[3]) + float(f[4]), f[7]))[0]
             for f in (line.split() for line in meeting.with_suffix(".rttm").read_text().splitlines())]
    k = len(segments) // 2
    bare = [*segments[:k], replace(segments[k], words=None), *segments[k + 1:]]
    assert len(segments) > 4 and len(segments[k].words) > 2
    by_word, mixed = merge_speakers(segments, turns, with_words=True), merge_speakers(bare, turns, with_words=True)
    # The other segments keep their word-by-word labels; the bare one is listed with no words...
    flat = [w for run in by_word for w in run["words"]]
    first = sum(len(segment.words) for segment in segments[:k])
    assert [w for run in mixed for w in run["words"]] == flat[:first] + flat[first + len(segments[k].words):]
    # ...and goes whole, inside one run, to the speaker who overlaps it most.
    [holder] = [run for run in mixed if segments[k].text.strip() in run["text"]]
    overlap = {t.speaker: 0.0 for t in turns}
    for t in turns:
        overlap[t.speaker] += max(0.0, min(t.end, segments[k].end) - max(t.start, segments[k].start))
    assert holder["speaker"] == max(overlap, key=overlap.get)
    assert " ".join(run["text"] for run in mixed).split() == " ".join(run["text"] for run in by_word).split()
