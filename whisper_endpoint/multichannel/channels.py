"""Multichannel recordings (``multichannel: true``): one speaker per channel.

Call centres and many meeting recorders put each party on its own channel; down-mixing throws that
evidence away. Here the other parties' voices leaking into each channel are muted first
(``crosstalk.py``), then the handler runs each channel through its own per-audio flow (ASR, with the
VAD unless ``vad_filter`` says otherwise, and diarization only with ``diarize_channels: true``), and
``merge.py`` puts the channels' results together in time order. A silent channel (peak under
-60 dBFS once its leaks are muted) is not transcribed: it gives no words, and Whisper gets no chance
to make some up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from whisper_endpoint.audio.decode import Audio
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.multichannel.crosstalk import gate_crosstalk

SILENCE_PEAK = 10 ** (-60 / 20)  # -60 dBFS; digital silence, or a line with nothing but hiss
DUPLICATE_RATIO = 1e-3  # two channels whose difference is 30 dB under the signal hold the same audio


@dataclass(frozen=True)
class Channel:
    index: int
    name: str
    samples: np.ndarray | None  # mono, its leaks muted; None: silent, not to be transcribed


def channel_names(config: InferenceConfig, count: int) -> list[str]:
    return list(config.channel_names or (f"CHANNEL_{index}" for index in range(count)))


def split_channels(audio: Audio, config: InferenceConfig, warnings: list[str]) -> list[Channel]:
    """The channels of ``audio`` (samples: channels x n), each to be transcribed on its own."""
    _warn_duplicates(audio.samples, warnings)
    gated = gate_crosstalk(audio.samples)  # the other parties' voices leaking into each channel, muted
    return [Channel(index, name, None if is_silent(samples) else np.ascontiguousarray(samples))
            for index, (name, samples) in enumerate(zip(channel_names(config, len(gated)), gated, strict=True))]


def channel_config(config: InferenceConfig) -> InferenceConfig:
    # Each channel's turns must sit at their true times on the common timeline, but Whisper's own times
    # after a silence are loose (a first word "from" 0.0 when it was said at 1.0), and a channel is mostly
    # silence: the VAD cuts the silence out first (unless vad_filter is set), word times tighten each
    # turn, and diarized runs come with their words, so that turns can be cut between them. The chunks
    # still come as the request asked.
    vad = config.vad_filter if "vad_filter" in config.model_fields_set else True
    return config.model_copy(update={"return_timestamps": "word", "vad_filter": vad, "return_speaker_words": True})


def is_silent(samples: np.ndarray) -> bool:
    return not len(samples) or float(np.abs(samples).max()) < SILENCE_PEAK


def _warn_duplicates(channels: np.ndarray, warnings: list[str]) -> None:
    """Many "stereo" recordings are one signal twice (dual mono): each copy would be transcribed."""
    for first in range(len(channels)):
        for second in range(first + 1, len(channels)):
            a, b = channels[first], channels[second]
            if np.any(a) and np.sum(np.square(a - b)) <= DUPLICATE_RATIO * np.sum(np.square(a)):
                warnings.append(f"channels {first} and {second} carry the same audio (dual mono?): each was "
                                "transcribed; send such files without multichannel")
