"""Audio in, 16 kHz mono float32 out.

Files of any container FFmpeg knows (wav, flac, mp3, ogg/opus, m4a, webm...) are decoded with PyAV,
down-mixed and resampled in one pass; decoding stops as soon as the duration limit is passed, so a
small file that expands into hours of audio never fills memory. Arrays are resampled the same way.

A file that decodes to less audio than its header declares (FLAC's STREAMINFO total samples, a WAV
data chunk's size, an MP4 track's or a Matroska segment's duration, an MP3 Xing/VBRI frame count)
was cut short, typically an incomplete upload: what decodes is transcribed, and ``Audio.warnings``
names both lengths. A warning, not an error: the transcript of what arrived is right, and a refusal
would throw it away. Files that declare no length (MediaRecorder's WebM, streamed FLAC whose total
is 0, Ogg, ADTS, whose FFmpeg durations are estimates) are never flagged.
"""

from __future__ import annotations

import gc
import io
from dataclasses import dataclass

import av
import numpy as np

from whisper_endpoint.errors import (
    EmptyAudioError,
    InvalidInputError,
    PayloadTooLargeError,
    UndecodableAudioError,
)

TARGET_RATE = 16000
_ARRAY_FRAME = 65536  # samples per frame handed to the resampler for array inputs
MAX_ARRAY_PEAK = 8.0  # float samples are -1..1; some headroom for gain and resampling overshoot
TRUNCATION_TOLERANCE_S = 0.5  # codec delay and padding stay under 0.3 s (AAC priming at 8 kHz)


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray  # float32, mono, TARGET_RATE
    source_rate: int
    source_channels: int
    warnings: tuple[str, ...] = ()  # e.g. a file that ends before its declared length

    @property
    def duration(self) -> float:
        return len(self.samples) / TARGET_RATE


def decode_file(data: bytes, *, max_seconds: float) -> Audio:
    """Decode an audio file held in memory.

    Two passes: the first only counts decoded seconds, keeping nothing, so a small file that expands
    past the limit is refused before any of its audio is stored (it costs under half of a full
    decode); the second decodes and resamples.
    """
    if not data:
        raise EmptyAudioError("the audio input is empty (0 bytes)")
    with _open(data) as container:
        stream = container.streams.audio[0]
        decoded = _check_duration(container, stream, max_seconds)
        warnings = _truncation_warnings(_declared_seconds(data, container, stream), decoded)
    with _open(data) as container:
        stream = container.streams.audio[0]
        rate, channels = stream.codec_context.sample_rate, stream.codec_context.channels
        frames = _decoded_frames(container, stream)
        samples = _resample(frames, max_seconds=max_seconds)
    return _checked(Audio(samples, rate or TARGET_RATE, channels or 1, warnings))


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
    default_rate = stream.codec_context.sample_rate or TARGET_RATE
    seconds = 0.0
    for frame in _decoded_frames(container, stream):
        seconds += frame.samples / (frame.sample_rate or default_rate)
        if seconds > max_seconds:
            raise _too_long(max_seconds)
    return seconds


def _declared_seconds(data: bytes, container, stream) -> float | None:
    """The length the file's header declares, for the formats that declare one (FFmpeg's durations of
    the others are estimates from what is there, or from the bit rate)."""
    name = container.format.name
    if name == "wav":  # FFmpeg clamps the data chunk's size to the bytes present: read the header
        return _wav_declared_seconds(data)
    if name == "matroska,webm":
        return container.duration / 1e6 if container.duration is not None else None
    declares = name in ("flac", "mov,mp4,m4a,3gp,3g2,mj2") or (name == "mp3" and _mp3_has_length_tag(data))
    if declares and stream.duration is not None:
        return float(stream.duration * stream.time_base)
    return None


def _wav_declared_seconds(data: bytes) -> float | None:
    """The data chunk's size over the byte rate; None for streamed WAV (size 0 or 0xFFFFFFFF) and RF64."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    position, byte_rate = 12, 0
    while position + 8 <= len(data):
        chunk, size = data[position : position + 4], int.from_bytes(data[position + 4 : position + 8], "little")
        if chunk == b"fmt " and size >= 12:
            byte_rate = int.from_bytes(data[position + 16 : position + 20], "little")
        elif chunk == b"data":
            return size / byte_rate if byte_rate and size not in (0, 0xFFFFFFFF) else None
        position += 8 + size + (size & 1)  # chunks are padded to even sizes
    return None


def _mp3_has_length_tag(data: bytes) -> bool:
    """A Xing/Info or VBRI tag (frame count) in the first frame, after any ID3v2 tag."""
    start = 0
    if data[:3] == b"ID3" and len(data) >= 10:
        start = 10 + ((data[6] & 0x7F) << 21 | (data[7] & 0x7F) << 14 | (data[8] & 0x7F) << 7 | (data[9] & 0x7F))
    head = data[start : start + 256]
    return any(tag in head for tag in (b"Xing", b"Info", b"VBRI"))


def _truncation_warnings(declared: float | None, decoded: float) -> tuple[str, ...]:
    if declared is None or decoded + TRUNCATION_TOLERANCE_S >= declared:
        return ()
    return (
        f"the file declares {declared:.2f} s of audio but only {decoded:.2f} s decode (a truncated file or an "
        f"incomplete upload?): the transcript covers those {decoded:.2f} s",
    )


def from_array(values, sampling_rate: int, *, max_seconds: float) -> Audio:
    """Validate and resample raw samples: 1-D, or 2-D as (channels, samples)."""
    try:
        array = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("inputs.array must be a list of numbers") from exc
    if array.ndim == 2 and 1 <= array.shape[0] <= 8:
        channels, array = array.shape[0], array.mean(axis=0)
    elif array.ndim == 1:
        channels = 1
    else:
        raise InvalidInputError(
            f"inputs.array must be 1-D samples or 2-D (channels<=8, samples); got shape {array.shape}"
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
    if sampling_rate != TARGET_RATE and len(array):
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


def _resample(frames, *, max_seconds: float) -> np.ndarray:
    limit = int(max_seconds * TARGET_RATE)
    chunks, total = [], 0
    resampler, source = None, None

    def keep(outs) -> None:
        nonlocal total
        for out in outs:
            chunk = out.to_ndarray().reshape(-1)
            total += len(chunk)
            if total > limit:
                raise _too_long(max_seconds)
            chunks.append(chunk)

    for frame in frames:
        frame.pts = None  # let the resampler count; damaged files carry broken timestamps
        # A resampler takes one input format: a damaged or chained stream can change its channels
        # or rate mid-way (found by scripts/fuzz.py), so such a change starts a new one.
        shape = (frame.format.name, frame.layout.name, frame.sample_rate)
        if shape != source:
            if resampler is not None:
                keep(resampler.resample(None))
            resampler = av.AudioResampler(format="flt", layout="mono", rate=TARGET_RATE)
            source = shape
        keep(resampler.resample(frame))
    if resampler is not None:
        keep(resampler.resample(None))
    del resampler
    gc.collect()  # PyAV keeps resampler buffers alive until collected (faster-whisper issue #390)
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32, copy=False)


def _checked(audio: Audio) -> Audio:
    if len(audio.samples) == 0:
        raise EmptyAudioError("the audio contains no samples (zero-length audio)")
    return audio


def _too_long(max_seconds: float) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"the audio is longer than the limit of {max_seconds:g} s "
        "(setting MAX_AUDIO_SECONDS); split it or raise the limit"
    )
