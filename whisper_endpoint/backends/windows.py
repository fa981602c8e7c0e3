"""Windows for batched decoding of long audio: cut at pauses, and re-decode what a window left out.

Whisper declines to transcribe an utterance that ends close to its window's end (it expects the
next window to carry it): the sequential decoder then seeks back and decodes it again, but a batched
decoder has no next window, so faster-whisper's batched mode silently drops such utterances (seen on
../shared/audio/ja: 4 s of speech lost, CER 26% instead of 11%). We group speech found by the VAD
into windows that end at pauses, and give every window whose transcript stops early a second pass
over its remainder, as the sequential decoder's seek would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from whisper_endpoint.audio import TARGET_RATE

MIN_LEFTOVER_S = 1.0  # a remainder shorter than this is trailing padding, not missed speech
MIN_LEFTOVER_SPEECH_S = 0.3


@dataclass(frozen=True)
class Window:
    start: float
    end: float

    def clip(self) -> dict:
        return {"start": self.start, "end": self.end}


def speech_spans(samples: np.ndarray, max_window_s: float) -> list[Window]:
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(max_speech_duration_s=max_window_s, min_silence_duration_ms=160)
    return [Window(s["start"] / TARGET_RATE, s["end"] / TARGET_RATE) for s in get_speech_timestamps(samples, options)]


def group_at_pauses(speech: list[Window], max_window_s: float) -> list[Window]:
    """Join consecutive speech spans while the window stays within max_window_s."""
    windows: list[Window] = []
    for span in speech:
        if windows and span.end - windows[-1].start <= max_window_s:
            windows[-1] = Window(windows[-1].start, span.end)
        else:
            windows.append(span)
    return windows


def leftovers(windows: list[Window], segments: list, speech: list[Window]) -> list[Window]:
    """The part of each window after its last decoded segment, where the VAD still hears speech."""
    found = []
    for window in windows:
        inside = [s.end for s in segments if window.start <= s.start < window.end]
        covered = max(inside, default=window.start)
        rest = Window(covered, window.end)
        if rest.end - rest.start >= MIN_LEFTOVER_S and _speech_in(rest, speech) >= MIN_LEFTOVER_SPEECH_S:
            found.append(rest)
    return found


def _speech_in(window: Window, speech: list[Window]) -> float:
    return sum(max(0.0, min(s.end, window.end) - max(s.start, window.start)) for s in speech)
