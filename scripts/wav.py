"""WAV bytes for the scripts' requests: one writer, so every script sends the same bytes for the same samples."""

from __future__ import annotations

import io
import wave

import numpy as np

RATE = 16000


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
