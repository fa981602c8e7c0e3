"""Where the speech is: the Silero VAD that faster-whisper bundles, with its default options (those of
``vad_filter``: 0.5 threshold, 400 ms of padding around each span).

Whisper invents text over audio without speech ("you" over 30 s of digital silence, a language for pink
noise): the request flow asks here whether there is speech at all, and which decoded segments lie over
some (pipeline/asr_step.py); the backends detect the language on the speech it finds, not on the audio
around it.

Within a request the VAD hears its audio once (``heard_once``): the speech check, the long-form
windows, faster-whisper's own ``vad_filter`` and a failed window's pauses all ask about the same
samples, each with its own options; the Silero model's probabilities are computed once and each asks
its own question of them.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from whisper_endpoint.asr import request_state
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

    _hear_once()  # the model reached through the wrapper, in a request or not: the offset taken out
    found = get_speech_timestamps(np.asarray(samples, dtype=np.float32), VadOptions())
    return Speech(tuple((span["start"] / SAMPLE_RATE, span["end"] / SAMPLE_RATE) for span in found))


# The VAD's spans for long-form windows, packed end to end, and times moved back: faster-whisper's
# batched recipe (long_form/windows.py), here so that the VAD is reached through one module.
def spans_within(samples: np.ndarray, window_s: float) -> list[dict]:
    """The speech spans (in samples) with the options faster-whisper's BatchedInferencePipeline uses by
    default: none longer than ``window_s``."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    _hear_once()
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


@contextmanager
def heard_once() -> Iterator[None]:
    """The block (a request's ASR, on its thread) in which the VAD's probabilities over the same audio are
    computed once; they are dropped when it ends."""
    _hear_once()
    with request_state.opened(vad_probabilities={}):
        yield


DC_POLE = 0.9995  # the DC blocker's pole: a high-pass at about 1.3 Hz, far below speech


def without_offset(audio: np.ndarray) -> np.ndarray:
    """``audio`` through a DC blocker: an offset hides speech from Silero. An A-law line has one (its codes
    have no zero: 0.00017 of full scale lost a quarter of a dialogue's speech, docs/rooms.md), and a voice
    may carry its own (flite's: the file's mean 0.0035). Taken out where it is, not as the file's mean: a
    loud voice's offset taken out of the whole file put one on its quiet speakers, whose speech went unheard."""
    from scipy.signal import lfilter

    if not audio.size:
        return audio
    return lfilter(np.array([1.0, -1.0], np.float32), np.array([1.0, -DC_POLE], np.float32),
                   np.asarray(audio, dtype=np.float32))


class _HeardOnce:
    """faster-whisper's Silero model, its probabilities over one audio kept in the request's state while
    ``heard_once`` is open (every other call is the model's own)."""

    def __init__(self, model):
        self.model = model

    def __getattr__(self, name: str):  # the model's own (its ONNX session: serving/realtime/vad.py)
        return getattr(self.model, name)

    def __call__(self, audio: np.ndarray, *args, **kwargs):
        audio = without_offset(audio)
        state = request_state.current()
        kept = None if state is None else state.vad_probabilities
        if kept is None or args or kwargs:
            return self.model(audio, *args, **kwargs)
        key = (len(audio), hashlib.blake2b(np.ascontiguousarray(audio).tobytes(), digest_size=16).digest())
        if key not in kept:
            kept[key] = self.model(audio)
        return kept[key]


def _hear_once() -> None:
    """faster-whisper's ``get_speech_timestamps`` (ours and its ``vad_filter``) reaches the model through
    ``faster_whisper.vad.get_vad_model``: that one is made to give the model that keeps its probabilities."""
    from faster_whisper import vad

    if getattr(vad.get_vad_model, "heard_once", False):
        return
    original = vad.get_vad_model

    @functools.lru_cache
    def get_vad_model():
        return _HeardOnce(original())

    get_vad_model.heard_once = True
    vad.get_vad_model = get_vad_model
