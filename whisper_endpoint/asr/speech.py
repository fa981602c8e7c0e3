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


# The VAD's spans for long-form windows, packed end to end, and times moved back: faster-whisper's
# batched recipe (long_form/windows.py), here so that the VAD is reached through one module.
def spans_within(samples: np.ndarray, window_s: float) -> list[dict]:
    """The speech spans (in samples) with the options faster-whisper's BatchedInferencePipeline uses by
    default: none longer than ``window_s``."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    return get_speech_timestamps(samples, VadOptions(max_speech_duration_s=window_s, min_silence_duration_ms=160))


def packed(samples: np.ndarray, spans: list[dict], window_s: float):
    """faster-whisper's ``collect_chunks``: the spans' audio in chunks of at most ``window_s``, and where
    each chunk starts and how long it is."""
    from faster_whisper.vad import collect_chunks

    return collect_chunks(samples, spans, max_duration=window_s)


def restored_times(segments: list, spans: list[dict]) -> list:
    """Segments (and their words) decoded on speech packed from ``spans``, moved back to the original time."""
    from faster_whisper.transcribe import restore_speech_timestamps

    return list(restore_speech_timestamps(segments, spans, SAMPLE_RATE))
