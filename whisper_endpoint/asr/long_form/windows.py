"""Windows for batched decoding of long audio: speech packed end to end, then a second look at what
a window left out.

Packing is faster-whisper's own batched recipe (its VAD options, ``collect_chunks``,
``restore_speech_timestamps``): the pauses between speech are cut out, so long dialogue takes fewer
windows than cutting at pauses does, and the decoder sees only speech.

Whisper declines to transcribe an utterance that ends close to its window's end (it expects the
next window to carry it): the sequential decoder then seeks back and decodes it again, but a batched
decoder has no next window, so faster-whisper's batched mode silently drops such utterances (seen on
audio/ja: the start of an utterance lost). Every window whose transcript stops early gets a second
pass over its remainder, as the sequential decoder's seek would: each remainder alone, through the
sequential decoder and its temperature fallback (docs/long_form_accuracy.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from whisper_endpoint.asr import speech
from whisper_endpoint.core.types import SAMPLE_RATE

MIN_LEFTOVER_S = 1.0  # a remainder shorter than this is the VAD's padding, not missed speech


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    def clip(self) -> dict:
        return {"start": self.start, "end": self.end}

    def holds(self, start: float, end: float) -> bool:
        """Whether the stretch from ``start`` to ``end`` belongs to this window: by its midpoint, as a
        segment of the next window may start a few ms early (word timestamps do)."""
        return self.start <= (start + end) / 2 < self.end


@dataclass(frozen=True)
class PackedSpeech:
    """Speech only, joined end to end; ``windows`` are in this packed time."""

    audio: np.ndarray
    windows: list[Window]
    speech: list[dict]  # the spans, in samples of the original audio

    def original_times(self, segments: list) -> list:
        """Segments (and their words) decoded on the packed audio, moved back to the original time."""
        return speech.restored_times(segments, self.speech)

    def spans(self) -> list[tuple[float, float]]:
        """The VAD's spans in packed time (they follow each other there)."""
        edges = np.cumsum([0] + [span["end"] - span["start"] for span in self.speech]) / SAMPLE_RATE
        return [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:])]

    def pauses(self) -> list[float]:
        """Where one speech span meets the next, in packed time: the pauses that packing cut out."""
        return [end for _, end in self.spans()[:-1]]


def pack_speech(samples: np.ndarray, window_s: float) -> PackedSpeech:
    """Speech found by faster-whisper's bundled Silero VAD, packed into windows of at most window_s."""
    found = speech.spans_within(samples, window_s)
    if not found:
        return PackedSpeech(np.zeros(0, dtype=np.float32), [], [])
    chunks, metadata = speech.packed(samples, found, window_s)
    # collect_chunks starts with an empty window when the first span fills a whole one: an encoder pass
    # for nothing (cost.py counts every window).
    windows = [Window(m["offset"], m["offset"] + m["duration"]) for m in metadata if m["duration"] > 0]
    return PackedSpeech(np.concatenate(chunks), windows, found)


def leftovers(windows: list[Window], segments: list) -> list[Window]:
    """The part of each window after its last decoded segment, when it is long enough to be speech."""
    found = []
    for window in windows:
        inside = [s.end for s in segments if window.holds(s.start, s.end)]
        rest = Window(max(inside, default=window.start), window.end)
        if rest.end - rest.start >= MIN_LEFTOVER_S:
            found.append(rest)
    return found


def within(segments: list, windows: list[Window]) -> list:
    """Each decoded segment (and its words) ending by the end of the window that ``holds`` it. Past a
    window's end the decoder saw only padding, so a time it gives there is made up: a 5 s turn's segment
    ended 2 s into the next speaker's turn, which is then said to be in the first one's language."""
    for segment in segments:
        window = next((w for w in windows if w.holds(segment.start, segment.end)), None)
        if window is None or segment.end <= window.end:
            continue
        segment.end = window.end
        for word in segment.words or ():
            word.start, word.end = min(word.start, window.end), min(word.end, window.end)
    return segments


def shifted(segment, offset: float):
    """A decoded segment (and its words) moved ``offset`` seconds later."""
    segment.start, segment.end = segment.start + offset, segment.end + offset
    for word in segment.words or ():
        word.start, word.end = word.start + offset, word.end + offset
    return segment


def audio_of(audio: np.ndarray, start: float, end: float) -> np.ndarray:
    """The samples of ``audio`` from ``start`` to ``end`` seconds."""
    return audio[round(start * SAMPLE_RATE): round(end * SAMPLE_RATE)]
