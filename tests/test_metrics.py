"""cpWER: the speaker-attributed error rate the diarization evaluation reports."""

import pytest

from support.metrics import cp_error_rate

REFERENCE = {"alice": "good morning everyone", "bob": "hello there"}


def test_labels_do_not_matter_only_who_said_what_together():
    assert cp_error_rate(REFERENCE, {"SPEAKER_01": "Good morning, everyone.", "SPEAKER_00": "Hello there!"}) == 0.0


def test_a_word_given_to_the_wrong_speaker_costs_two_errors():
    # "there" leaves bob (a deletion) and joins alice (an insertion): 2 errors over 5 reference words.
    hypothesis = {"A": "good morning everyone there", "B": "hello"}
    assert cp_error_rate(REFERENCE, hypothesis) == pytest.approx(2 / 5)


def test_one_merged_speaker_loses_the_other_speakers_words():
    # Best pairing puts the merged text with alice: 2 insertions; bob's 2 words are deleted.
    assert cp_error_rate(REFERENCE, {"A": "good morning everyone hello there"}) == pytest.approx(4 / 5)


def test_extra_hypothesis_speakers_count_as_insertions():
    hypothesis = {"A": "good morning everyone", "B": "hello there", "C": "um"}
    assert cp_error_rate(REFERENCE, hypothesis) == pytest.approx(1 / 5)


def test_characters_for_unspaced_scripts():
    reference = {"a": "今日は晴れ", "b": "そうですね"}
    assert cp_error_rate(reference, {"x": "そうですね", "y": "今日は晴れ"}, characters=True) == 0.0
    # Merged: 5 characters inserted into one pairing, 5 deleted from the other.
    assert cp_error_rate(reference, {"x": "今日は晴れそうですね"}, characters=True) == pytest.approx(10 / 10)


def test_tcpwer_also_asks_each_word_to_come_near_its_time():
    from support.metrics import Said, cp_wer, tcp_wer

    reference = [Said("alice", 0.0, 2.0, "good morning everyone"), Said("bob", 30.0, 31.0, "hello there")]
    on_time = [Said("x", 0.1, 1.9, "good morning everyone"), Said("y", 30.2, 31.0, "hello there")]
    late = [Said("x", 0.1, 1.9, "good morning everyone"), Said("y", 12.0, 13.0, "hello there")]
    assert cp_wer(reference, on_time) == tcp_wer(reference, on_time) == 0.0
    assert cp_wer(reference, late) == 0.0  # cpWER ignores times
    assert tcp_wer(reference, late) == pytest.approx(4 / 5)  # bob's words 18 s off: deleted, and inserted
