"""Audio in, 16 kHz mono float32 out.

Files of any container FFmpeg knows (wav, flac, mp3, ogg/opus, m4a, webm...) are decoded with PyAV,
down-mixed and resampled in one pass; decoding stops as soon as the duration limit is passed, so a
small file that expands into hours of audio never fills memory. Arrays are resampled the same way.
Multichannel requests keep the channels apart instead (``decode_channels``, ``channels_from_array``):
each channel is resampled on its own, and the limit counts channel-seconds.

A file that decodes to less audio than its header declares gets a warning in ``Audio.warnings``
(``declared_length``).
"""

from __future__ import annotations

import gc
import io
from dataclasses import dataclass

import av
import numpy as np

from whisper_endpoint.audio.declared_length import truncation_warnings
from whisper_endpoint.audio.spool import SpooledSamples
from whisper_endpoint.core.config import MAX_CHANNELS
from whisper_endpoint.core.errors import (
    EmptyAudioError,
    InvalidInputError,
    PayloadTooLargeError,
    UndecodableAudioError,
)
from whisper_endpoint.core.types import SAMPLE_RATE

_ARRAY_FRAME = 65536  # samples per frame handed to the resampler for array inputs
MAX_ARRAY_PEAK = 8.0  # float samples are -1..1; some headroom for gain and resampling overshoot
# The frames' durations are summed in floats: 4 hours of FLAC frames came to 14400.00000001843 s. A file of
# exactly the limit is not over it (the resampler's count of samples is exact and checks again).
_SUM_SLACK_S = 1e-6


@dataclass(frozen=True)
class Audio:
    # float32, SAMPLE_RATE; mono (n,), or (channels, n) from decode_channels; a long file: on disk (spool.py)
    samples: np.ndarray | SpooledSamples
    source_rate: int
    source_channels: int
    warnings: tuple[str, ...] = ()  # e.g. a file that ends before its declared length

    @property
    def duration(self) -> float:
        return self.samples.shape[-1] / SAMPLE_RATE


def decode_file(data: bytes, *, max_seconds: float, spool_over_s: float | None = None) -> Audio:
    """Decode an audio file held in memory.

    Two passes: the first only counts decoded seconds, keeping nothing, so a small file that expands
    past the limit is refused before any of its audio is stored (it costs under half of a full
    decode); the second decodes and resamples. Audio longer than ``spool_over_s`` is written to a
    temporary file as it is resampled (``samples`` is then a ``SpooledSamples``, read by slices).
    """
    if not data:
        raise EmptyAudioError("the audio input is empty (0 bytes)")
    with _open(data) as container:
        stream = container.streams.audio[0]
        decoded = _check_duration(container, stream, max_seconds)
        warnings = truncation_warnings(data, container, stream, decoded)
    with _open(data) as container:
        stream = container.streams.audio[0]
        rate, channels = stream.codec_context.sample_rate, stream.codec_context.channels
        frames = _decoded_frames(container, stream)
        into = SpooledSamples() if spool_over_s is not None and decoded > spool_over_s else None
        samples = _resample(frames, max_seconds=max_seconds, into=into)
    return _checked(Audio(samples, rate or SAMPLE_RATE, channels or 1, warnings))


def _open(data: bytes):
    try:
        container = av.open(io.BytesIO(data), mode="r", metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as exc:
        raise UndecodableAudioError(
            f"the input is not a decodable audio file ({len(data)} bytes; "
            "expected wav, flac, mp3, ogg/opus, m4a, webm or another FFmpeg format)"
        ) from exc
    if not container.streams.audio:
        container.close()
        raise UndecodableAudioError("the file contains no audio stream")
    if container.streams.audio[0].codec_context is None:  # a codec FFmpeg has no decoder for
        container.close()
        raise UndecodableAudioError("the file's audio codec cannot be decoded (no decoder for it)")
    return container


def _check_duration(container, stream, max_seconds: float) -> float:
    """Count the decoded seconds, stopping (413) as soon as they pass ``max_seconds``."""
    default_rate = stream.codec_context.sample_rate or SAMPLE_RATE
    seconds = 0.0
    for frame in _decoded_frames(container, stream):
        seconds += frame.samples / (frame.sample_rate or default_rate)
        if seconds > max_seconds + _SUM_SLACK_S:
            raise _too_long(max_seconds)
    return seconds


def from_array(values, sampling_rate: int, *, max_seconds: float) -> Audio:
    """Validate and resample raw samples: 1-D, or 2-D as (channels, samples)."""
    try:
        array = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("inputs.array must be a list of numbers") from exc
    if array.ndim == 2 and 1 <= array.shape[0] <= MAX_CHANNELS:
        channels, array = array.shape[0], array.mean(axis=0)
    elif array.ndim == 1:
        channels = 1
    else:
        raise InvalidInputError(
            f"inputs.array must be 1-D samples or 2-D (channels<={MAX_CHANNELS}, samples); got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise InvalidInputError("inputs.array contains NaN or infinite values")
    peak = float(np.abs(array).max()) if len(array) else 0.0
    if peak > MAX_ARRAY_PEAK:
        # Far outside -1..1 Whisper transcribes garbage (int16-scaled samples) or overflows its
        # features and decodes for many times the audio's length (1e19).
        raise InvalidInputError(
            f"inputs.array samples must be floats in -1..1 (peaks up to {MAX_ARRAY_PEAK:g} are "
            f"accepted); this one peaks at {peak:.6g}: divide int16 samples by 32768"
        )
    if len(array) / sampling_rate > max_seconds:
        raise _too_long(max_seconds)
    if sampling_rate != SAMPLE_RATE and len(array):
        array = _resample(_array_frames(array, sampling_rate), max_seconds=max_seconds)
    return _checked(Audio(np.ascontiguousarray(array, dtype=np.float32), sampling_rate, channels))


def _decoded_frames(container, stream):
    """Yield decoded frames, skipping the undecodable ones a damaged file can contain."""
    try:
        for packet in container.demux(stream):
            try:
                yield from packet.decode()
            except av.error.InvalidDataError:
                continue
    except av.FFmpegError as exc:
        raise UndecodableAudioError(f"the audio stream could not be decoded: {exc}") from exc


def _array_frames(array: np.ndarray, rate: int):
    for start in range(0, len(array), _ARRAY_FRAME):
        frame = av.AudioFrame.from_ndarray(
            array[None, start : start + _ARRAY_FRAME], format="flt", layout="mono"
        )
        frame.sample_rate = rate
        frame.pts = start
        yield frame


def _resample(frames, *, max_seconds: float, into: SpooledSamples | None = None) -> np.ndarray | SpooledSamples:
    """The frames as 16 kHz mono float32: one array, or appended to ``into`` as they come."""
    limit = int(max_seconds * SAMPLE_RATE)
    chunks, total = [], 0
    resampler, source = None, None

    def keep(outs) -> None:
        nonlocal total
        for out in outs:
            chunk = out.to_ndarray().reshape(-1)
            total += len(chunk)
            if total > limit:
                raise _too_long(max_seconds)
            (into if into is not None else chunks).append(chunk)

    for frame in frames:
        frame = _at_most_eight_channels(frame)
        frame.pts = None  # let the resampler count; damaged files carry broken timestamps
        # A resampler takes one input format: a damaged or chained stream can change its channels
        # or rate mid-way (found by scripts/fuzz.py), so such a change starts a new one.
        shape = (frame.format.name, frame.layout.name, frame.sample_rate)
        if shape != source:
            if resampler is not None:
                keep(resampler.resample(None))
            resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
            source = shape
        keep(resampler.resample(frame))
    if resampler is not None:
        keep(resampler.resample(None))
    del resampler
    gc.collect()  # PyAV keeps resampler buffers alive until collected (faster-whisper issue #390)
    if into is not None:
        return into
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32, copy=False)


def _at_most_eight_channels(frame):
    """A frame of more than 8 channels, down-mixed here to mono (the mean of its channels): FFmpeg's
    resampler refuses most such unnamed layouts (9, 11, 13 and 15 to 33 channels, PyAV 18)."""
    if len(frame.layout.channels) <= MAX_CHANNELS:
        return frame
    mono = av.AudioFrame.from_ndarray(_float_planes(frame).mean(axis=0, keepdims=True), format="flt", layout="mono")
    mono.sample_rate = frame.sample_rate
    return mono


def _checked(audio: Audio) -> Audio:
    if len(audio.samples) == 0:
        raise EmptyAudioError("the audio contains no samples (zero-length audio)")
    return audio


def _too_long(max_seconds: float) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"the audio is longer than the limit of {max_seconds:g} s "
        "(setting MAX_AUDIO_SECONDS); split it or raise the limit"
    )


# --- multichannel: each channel on its own ---------------------------------------------------------------


def decode_channels(data: bytes, *, max_seconds: float) -> Audio:
    """Decode a file into its channels, each resampled to 16 kHz on its own: ``samples`` is
    (channels, n). ``max_seconds`` bounds the sum of channel-seconds, checked before anything is kept.
    """
    if not data:
        raise EmptyAudioError("the audio input is empty (0 bytes)")
    with _open(data) as container:
        stream = container.streams.audio[0]
        rate, count = stream.codec_context.sample_rate, stream.codec_context.channels
        check_channel_count(count)
        try:
            decoded = _check_duration(container, stream, max_seconds / count)
        except PayloadTooLargeError:
            raise _too_many_channel_seconds(count, max_seconds) from None
        warnings = truncation_warnings(data, container, stream, decoded)
    with _open(data) as container:
        channels = _resample_channels(_decoded_frames(container, container.streams.audio[0]), count)
    return _checked_channels(channels, rate or SAMPLE_RATE, warnings)


def channels_from_array(values, sampling_rate: int, *, max_seconds: float) -> Audio:
    """A 2-D array (channels, samples), each row validated and resampled as ``from_array`` does."""
    try:
        array = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("inputs.array must be a list of numbers (one list per channel)") from exc
    if array.ndim == 1:
        check_channel_count(1)  # raises: one channel
    if array.ndim != 2:
        raise InvalidInputError(f"inputs.array must be 2-D (channels, samples); got shape {array.shape}")
    count = array.shape[0]
    check_channel_count(count)
    if count * array.shape[1] / sampling_rate > max_seconds:
        raise _too_many_channel_seconds(count, max_seconds)
    rows = [from_array(row, sampling_rate, max_seconds=max_seconds).samples for row in array]
    return _checked_channels(rows, sampling_rate)


def check_channel_count(count: int) -> None:
    if count < 2:
        raise InvalidInputError(
            f"multichannel needs audio with 2 to {MAX_CHANNELS} channels; this audio has {count}: "
            "send it without multichannel"
        )
    if count > MAX_CHANNELS:
        raise InvalidInputError(
            f"multichannel takes at most {MAX_CHANNELS} channels; this audio has {count}: "
            "send it without multichannel (down-mixed), or fewer channels"
        )


def _resample_channels(frames, count: int) -> list[np.ndarray]:
    """Each channel through its own mono resampler, in one decoding pass. No frame with more than one
    channel reaches a resampler: PyAV's crashes the process on 8 or more channels of unnamed layout
    (PyAV 18)."""
    outputs: list[list[np.ndarray]] = [[] for _ in range(count)]
    resamplers: list = []
    source = None

    def keep(channel: int, frame) -> None:
        outputs[channel].extend(out.to_ndarray().reshape(-1) for out in resamplers[channel].resample(frame))

    for frame in frames:
        planes = _float_planes(frame)
        if planes.shape[0] != count:
            raise UndecodableAudioError(
                f"the number of channels changes within the stream ({count} -> {planes.shape[0]}); "
                "multichannel needs a constant one: send it without multichannel"
            )
        if frame.sample_rate != source:  # a chained stream can change its rate: new resamplers
            for channel in range(len(resamplers)):
                keep(channel, None)
            resamplers = [av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE) for _ in range(count)]
            source = frame.sample_rate
        for channel in range(count):
            mono = av.AudioFrame.from_ndarray(np.ascontiguousarray(planes[channel : channel + 1]), format="flt",
                                              layout="mono")
            mono.sample_rate = source
            keep(channel, mono)
    for channel in range(len(resamplers)):
        keep(channel, None)
    resamplers = []
    gc.collect()  # PyAV keeps resampler buffers alive until collected (faster-whisper issue #390)
    return [np.concatenate(out).astype(np.float32, copy=False) if out else np.zeros(0, np.float32) for out in outputs]


def _float_planes(frame) -> np.ndarray:
    """A decoded frame as float32 (channels, samples) in -1..1, whatever its sample format."""
    data = frame.to_ndarray()
    if not frame.format.is_planar:  # interleaved: one row of samples x channels
        data = data.reshape(-1, len(frame.layout.channels)).T
    if data.dtype.kind == "f":
        return data.astype(np.float32, copy=False)
    if data.dtype.kind == "u":  # FFmpeg's only unsigned format, u8, is centred on 128
        return (data.astype(np.float32) - 128.0) / 128.0
    return (data / float(-np.iinfo(data.dtype).min)).astype(np.float32)


def _checked_channels(channels: list[np.ndarray], source_rate: int, warnings: tuple[str, ...] = ()) -> Audio:
    length = min(len(channel) for channel in channels)
    if length == 0:
        raise EmptyAudioError("the audio contains no samples (zero-length audio)")
    samples = np.stack([channel[:length] for channel in channels])
    return Audio(samples, source_rate, len(channels), warnings)


def _too_many_channel_seconds(count: int, max_seconds: float) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"the audio's {count} channels add up to more than the limit of {max_seconds:g} s "
        "(setting MAX_AUDIO_SECONDS; multichannel counts every channel's seconds); split it or raise the limit"
    )
