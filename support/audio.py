"""The repository's audio and its readers and writers: one of each, so every test, benchmark and
evaluation reads the same samples and sends the same bytes."""

from __future__ import annotations

import io
import json
import wave
from pathlib import Path

import numpy as np

from support.paths import CLIPS

RATE = 16000


def clip_refs() -> dict[str, str]:
    """clips/: file name -> its reference text."""
    return {item["file"]: item["text"] for item in json.loads((CLIPS / "refs.json").read_text())}


def read_clip(name: str) -> bytes:
    return (CLIPS / name).read_bytes()


def decode_reference(path: Path) -> np.ndarray:
    """faster-whisper's own decoder (16 kHz mono float32): the yardstick for ours."""
    from faster_whisper import decode_audio

    return decode_audio(str(path))


def encode(samples: np.ndarray, rate: int, container: str, codec: str, channels: int = 1,
           options: dict | None = None) -> bytes:
    """Encode float samples (channels, n) or (n,) into an in-memory file with PyAV's FFmpeg (``options``:
    the muxer's, e.g. ``{"live": "1"}`` for WebM as MediaRecorder writes it, without a duration)."""
    import av

    data = np.atleast_2d(samples).astype(np.float32)
    if data.shape[0] == 1 and channels > 1:
        data = np.repeat(data, channels, axis=0)
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container, options=options or {}) as out:
        stream = out.add_stream(codec, rate=rate, layout="stereo" if channels == 2 else "mono")
        fmt = stream.codec_context.codec.audio_formats[0].name
        frames = []
        if data.shape[1]:
            frames = [av.AudioFrame.from_ndarray(np.ascontiguousarray(data.T.reshape(1, -1)), format="flt",
                                                 layout=stream.layout.name)]
            frames[0].sample_rate = rate
        resampler = av.AudioResampler(format=fmt, layout=stream.layout.name, rate=rate)
        for converted in [c for f in frames for c in resampler.resample(f)] + resampler.resample(None):
            for packet in stream.encode(converted):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()


def pcm16_wav(samples: np.ndarray, rate: int = RATE) -> bytes:
    """16-bit PCM WAV of mono (n,) or channels x n float samples in [-1, 1], rounded to the nearest step."""
    data = np.atleast_2d(samples)
    pcm = (np.clip(data.T, -1, 1) * 32767).round().astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(data.shape[0])
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())
    return buffer.getvalue()


def pcm16(path: Path, rate: int) -> np.ndarray:
    """A file's audio as int16 mono samples at ``rate`` (what a live session or a microphone streams)."""
    import av

    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    pieces = []
    with av.open(str(path)) as container:
        for frame in container.decode(audio=0):
            pieces += [out.to_ndarray().reshape(-1) for out in resampler.resample(frame)]
    pieces += [out.to_ndarray().reshape(-1) for out in resampler.resample(None)]
    return np.concatenate(pieces).astype(np.int16)
