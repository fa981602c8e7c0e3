"""Batched windows: speech packed end to end, times moved back, and a window's unfinished remainder found."""

from dataclasses import dataclass

import numpy as np

from whisper_endpoint.asr.long_form.windows import (
    PackedSpeech,
    Window,
    leftovers,
    shifted,
    within,
)
from whisper_endpoint.core.types import SAMPLE_RATE


@dataclass
class Seg:
    start: float
    end: float
    words: list | None = None


@dataclass
class Word:
    start: float
    end: float


def test_leftover_is_the_unfinished_remainder():
    windows = [Window(0, 27.8), Window(27.8, 36)]
    segments = [Seg(0, 12), Seg(12, 24), Seg(27.8, 36)]  # the first window stopped at 24 s
    assert leftovers(windows, segments) == [Window(24, 27.8)]


def test_a_segment_starting_just_before_the_next_window_belongs_to_it():
    windows = [Window(0, 29.296), Window(29.296, 36.48)]
    segments = [Seg(0, 27.48), Seg(29.29, 32.43), Seg(32.97, 36.2)]  # the second starts 6 ms before its window
    assert leftovers(windows, segments) == [Window(27.48, 29.296)]


def test_no_leftover_for_a_tail_under_a_second():
    assert leftovers([Window(0, 27.8)], [Seg(0, 27.2)]) == []


def test_a_window_with_no_segment_is_retried_whole():
    assert leftovers([Window(5, 20)], []) == [Window(5, 20)]


def test_packed_times_go_back_to_the_original_audio():
    # Speech at 1-2 s and 5-6 s of the original: 0-1 s and 1-2 s once packed.
    speech = [{"start": 1 * SAMPLE_RATE, "end": 2 * SAMPLE_RATE}, {"start": 5 * SAMPLE_RATE, "end": 6 * SAMPLE_RATE}]
    packed = PackedSpeech(np.zeros(2 * SAMPLE_RATE, dtype=np.float32), [Window(0, 2)], speech)
    plain, worded = Seg(0.25, 0.75), Seg(1.2, 1.8, [Word(1.2, 1.4), Word(1.5, 1.8)])
    restored = packed.original_times([plain, worded])
    assert [(s.start, s.end) for s in restored] == [(1.25, 1.75), (5.2, 5.8)]
    assert [(w.start, w.end) for w in restored[1].words] == [(5.2, 5.4), (5.5, 5.8)]


def test_a_remainder_decoded_alone_is_moved_to_its_window():
    segment = shifted(Seg(0.5, 1.5, [Word(0.5, 0.9), Word(1.0, 1.5)]), 27.48)
    assert (segment.start, segment.end) == (27.98, 28.98)
    assert [(w.start, w.end) for w in segment.words] == [(27.98, 28.38), (28.48, 28.98)]


def test_a_segment_ends_by_the_end_of_the_window_it_was_decoded_in():
    # A 5 s turn's segment said to end 2 s into the next window (the decoder saw padding there): it ends
    # where its window does, and so do its words. A segment of the next window starting a few ms early,
    # one within its window and one of no window stay as they are.
    windows = [Window(0, 4.99), Window(4.99, 9.0)]
    over = Seg(0.0, 7.0, [Word(0.0, 3.0), Word(3.0, 5.5), Word(6.0, 7.0)])
    early, inside, stray = Seg(4.985, 6.0), Seg(6.0, 8.5), Seg(9.5, 10.0)
    within([over, early, inside, stray], windows)
    assert (over.end, [(w.start, w.end) for w in over.words]) == (4.99, [(0.0, 3.0), (3.0, 4.99), (4.99, 4.99)])
    assert [(s.start, s.end) for s in (early, inside, stray)] == [(4.985, 6.0), (6.0, 8.5), (9.5, 10.0)]
