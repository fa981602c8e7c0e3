"""Batched windows: cut at pauses, and the remainder of a window that stopped early is found."""

from dataclasses import dataclass

from whisper_endpoint.backends.windows import Window, group_at_pauses, leftovers


@dataclass
class Seg:
    start: float
    end: float


def test_grouping_joins_speech_up_to_the_window_length():
    speech = [Window(0, 5), Window(6, 20), Window(21, 28), Window(29, 35), Window(40, 41)]
    assert group_at_pauses(speech, 29) == [Window(0, 28), Window(29, 41)]


def test_a_span_longer_than_the_window_stays_alone():
    assert group_at_pauses([Window(0, 2), Window(3, 40)], 29) == [Window(0, 2), Window(3, 40)]


def test_leftover_is_the_unfinished_remainder_with_speech():
    windows = [Window(0, 27.8), Window(28, 36)]
    speech = [Window(0, 23), Window(23.8, 27.6), Window(28, 36)]
    segments = [Seg(0, 12), Seg(12, 24), Seg(28, 36)]  # the first window stopped at 24 s
    assert leftovers(windows, segments, speech) == [Window(24, 27.8)]


def test_no_leftover_for_trailing_silence_or_a_short_tail():
    windows = [Window(0, 27.8)]
    assert leftovers(windows, [Seg(0, 24)], [Window(0, 23.9)]) == []  # no speech after 24 s
    assert leftovers(windows, [Seg(0, 27.2)], [Window(0, 27.8)]) == []  # tail under a second


def test_a_window_with_no_segment_is_retried_whole():
    assert leftovers([Window(5, 20)], [], [Window(5, 20)]) == [Window(5, 20)]
