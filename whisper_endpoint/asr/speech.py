"""Where the speech is: the Silero VAD that faster-whisper bundles, with its default options (those of
``vad_filter``: 0.5 threshold, 400 ms of padding around each span).

Whisper invents text over audio without speech ("you" over 30 s of digital silence, a language for pink
noise): the request flow asks here whether there is speech at all, and which decoded segments lie over
some (pipeline/asr_step.py); the backends detect the language on the speech it finds, not on the audio
around it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from whisper_endpoint.core.types import SAMPLE_RATE

LANGUAGE_WINDOW_S = 30.0  # Whisper's window: what language detection looks at


@dataclass(frozen=True)
class Speech:
    spans: tuple[tuple[float, float], ...]  # seconds, in time order, padded by the VAD

    def __bool__(self) -> bool:
        return bool(self.spans)

    @property
    def seconds(self) -> float:
        return sum(end - start for start, end in self.spans)

    def overlaps(self, start: float, end: float) -> bool:
        return any(s <= end and start <= e for s, e in self.spans)

    def audio(self, samples: np.ndarray, limit_s: float = LANGUAGE_WINDOW_S) -> np.ndarray:
        """The first ``limit_s`` seconds of speech, joined end to end (all of ``samples`` when none was found)."""
        if not self.spans:
            return samples
        pieces = [samples[round(start * SAMPLE_RATE): round(end * SAMPLE_RATE)] for start, end in self.spans]
        return np.concatenate(pieces)[: round(limit_s * SAMPLE_RATE)]


def find_speech(samples: np.ndarray) -> Speech:
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    found = get_speech_timestamps(np.asarray(samples, dtype=np.float32), VadOptions())
    return Speech(tuple((span["start"] / SAMPLE_RATE, span["end"] / SAMPLE_RATE) for span in found))
