"""People talking at once (issue 71): the stretches where the diarization hears two speakers, who gets
the words there, the listener's backchannel kept, and the ``overlap`` marks on the speaker runs; then the
same on overlapped audio made from the meeting, through the real diarization."""

import pytest

from support.overlaps import overlapped
from whisper_endpoint.core.types import Segment, SpeakerTurn, Word
from whisper_endpoint.speakers import overlap
from whisper_endpoint.speakers.merge import merge_speakers


def turns_from(*spec):
    return [SpeakerTurn(start, end, speaker) for start, end, speaker in spec]


def said(start, text, step=0.3):
    """One segment of contiguous words of ``step`` seconds from ``start``."""
    words = tuple(Word(start + i * step, start + (i + 1) * step, " " + token) for i, token in enumerate(text.split()))
    return Segment(words[0].start, words[-1].end, "".join(w.text for w in words), words)


def runs_of(segments, exclusive, regular=None):
    found = overlap.stretches(regular or exclusive)
    return overlap.marked(merge_speakers(segments, exclusive, overlaps=found), found)


def who(runs):
    return [(run["speaker"], run["text"]) for run in runs]


def test_stretches_are_where_two_speakers_talk_long_enough():
    turns = turns_from((0.0, 5.0, "A"), (4.0, 6.0, "B"), (5.95, 7.0, "A"), (7.5, 9.0, "A"), (8.0, 8.5, "A"))
    # B over A's end: a stretch; A's next turn touching B's end for 50 ms: edges meeting; A over A: one voice.
    assert [(s.start, s.end, s.speakers) for s in overlap.stretches(turns)] == [(4.0, 5.0, {"A", "B"})]


def test_an_ongoing_sentence_is_not_cut_by_the_one_who_cuts_in():
    # A's "... by the end of next month." runs 0.6 s into B's turn; the exclusive turns hand it to B at 2.4 s.
    segments = [said(0.0, "the release is ready by the end of next month."), said(3.0, "Great, let us meet.")]
    exclusive = turns_from((0.0, 2.4, "A"), (2.4, 4.2, "B"))
    regular = turns_from((0.0, 3.0, "A"), (2.4, 4.2, "B"))
    assert who(runs_of(segments, exclusive)) == [
        ("A", "the release is ready by the end of"), ("B", "next month. Great, let us meet.")]
    runs = runs_of(segments, exclusive, regular)
    assert who(runs) == [("A", "the release is ready by the end of next month."), ("B", "Great, let us meet.")]
    assert runs[0]["overlap"] == [[2.4, 3.0, "B"]] and "overlap" not in runs[1]


def test_the_sentence_after_goes_to_the_one_who_cut_in():
    # B's "Sure," starts inside the overlap, after A's question ended; the exclusive turns keep A till 3.3 s.
    segments = [said(0.0, "Shall we start with the numbers?"), said(1.8, "Sure, revenue grew by twelve percent.")]
    exclusive = turns_from((0.0, 3.3, "A"), (3.3, 4.0, "B"))
    regular = turns_from((0.0, 3.3, "A"), (1.5, 4.0, "B"))
    assert who(runs_of(segments, exclusive, regular)) == [
        ("A", "Shall we start with the numbers?"), ("B", "Sure, revenue grew by twelve percent.")]


def test_a_backchannel_stays_a_run_of_the_listener():
    # B's "Yeah." inside A's long turn: the exclusive turns leave it out, the regular ones keep it.
    segments = [said(0.0, "Thanks for joining the call."), said(1.5, "Yeah."),
                said(1.8, "Shall we start with the numbers?")]
    exclusive = turns_from((0.0, 3.6, "A"))
    regular = turns_from((0.0, 3.6, "A"), (1.45, 1.85, "B"))
    assert who(runs_of(segments, exclusive)) == [("A", "Thanks for joining the call. Yeah. Shall we start with the numbers?")]
    runs = runs_of(segments, exclusive, regular)
    assert who(runs) == [("A", "Thanks for joining the call."), ("B", "Yeah."), ("A", "Shall we start with the numbers?")]
    # A's runs only graze B's turn (50 ms each side): the mark is on B's "Yeah." alone.
    assert [run.get("overlap") for run in runs] == [None, [[1.5, 1.8, "A"]], None]


def test_without_the_yeah_the_next_sentence_stays_with_the_speaker():
    # The ASR did not write B's "yeah" (it seldom does over speech): A's next sentence, which starts inside
    # B's short turn and goes on after it, is still A's.
    segments = [said(0.0, "Thanks for joining the call."), said(1.5, "Shall we start with the numbers?")]
    exclusive = turns_from((0.0, 3.6, "A"))
    regular = turns_from((0.0, 3.6, "A"), (1.45, 1.85, "B"))
    runs = runs_of(segments, exclusive, regular)
    assert who(runs) == [("A", "Thanks for joining the call. Shall we start with the numbers?")]
    assert runs[0]["overlap"] == [[1.45, 1.85, "B"]]  # B was heard, though its words were not


def test_runs_without_overlap_are_left_as_they_were():
    segments = [said(0.0, "Good morning."), said(1.0, "Hello there.")]
    turns = turns_from((0.0, 0.9, "A"), (0.9, 1.6, "B"), (1.55, 1.6, "A"))
    runs = runs_of(segments, turns)
    assert runs == merge_speakers(segments, turns) and all("overlap" not in run for run in runs)



def test_two_hours_of_overlapped_turns_in_one_pass():
    # 4 s turns, each cutting 0.5 s into the one before, for 2 h; 24k words of 0.3 s, a sentence every 8th.
    # One sweep each (turns, words, runs): ~0.5 s here; one alive-set scan per edge took seconds.
    turns = [SpeakerTurn(k * 3.5, k * 3.5 + 4.0, "AB"[k % 2]) for k in range(2058)]
    words = tuple(Word(i * 0.3, i * 0.3 + 0.3, " w." if i % 8 == 7 else " w") for i in range(24_000))
    found = overlap.stretches(turns)
    runs = overlap.marked(merge_speakers([Segment(0.0, words[-1].end, "", words)], turns, overlaps=found), found)
    assert len(found) == len(turns) - 1 and all(s.end - s.start == 0.5 for s in found)
    assert sum(run["text"].count("w") for run in runs) == len(words)
    assert sum("overlap" in run for run in runs) > 0.9 * len(runs)  # a run may only graze a stretch

# --- the real diarizer on overlapped audio ------------------------------------------------------


@pytest.fixture(scope="module")
def interrupted(diarizing_handler):
    """The meeting's first 16 s rebuilt: rms's "yeah" inside slt's first turn, awb cutting into slt's
    question by 1.4 s; and what the embedded diarization makes of it."""
    made = overlapped("flite_meeting", 9, first_s=16)
    return made, diarizing_handler.diarizer.diarize(made.samples)


def test_the_stretches_are_the_true_overlaps(interrupted):
    made, diarization = interrupted
    found = [(s.start, s.end) for s in overlap.stretches(diarization.turns)]
    truth = made.overlaps()
    assert len(found) == len(truth) == 2
    for (start, end), (true_start, true_end) in zip(found, truth, strict=True):
        assert abs(start - true_start) < 0.25 and abs(end - true_end) < 0.25


def test_the_backchannel_is_a_turn_only_the_regular_diarization_keeps(interrupted):
    made, diarization = interrupted
    heard = made.backchannel
    assert heard is not None and heard.text == "yeah"

    def during(turns):
        return {t.speaker for t in turns if t.start < heard.end and heard.start < t.end}

    assert len(during(diarization.turns)) == 2 and len(during(diarization.exclusive)) == 1
