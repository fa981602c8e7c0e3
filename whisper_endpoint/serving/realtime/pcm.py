"""Client audio in: base64 mono audio, PCM16 little-endian at 24 or 16 kHz or G.711 at 8 kHz (mu-law
``audio/pcmu``, A-law ``audio/pcma``: telephone lines), to 16 kHz float32.

G.711 bytes become 16-bit samples first (``audio.g711``: FFmpeg's decoders), then go the PCM16 way.
Audio not at 16 kHz goes through one PyAV (libswresample) resampler per session, which keeps its
filter state between appends, so 100 ms pieces join without clicks at their borders.
"""

from __future__ import annotations

import base64
import binascii

import av
import numpy as np

from whisper_endpoint.audio import g711
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.serving.realtime.events import EventError


class PCMInput:
    def __init__(self, rate: int, audio_format: str = "audio/pcm"):
        self.rate = rate
        law = g711.MEDIA_TYPES.get(audio_format)
        self._g711 = g711.Decoder(law, rate) if law is not None else None
        self._width = 1 if self._g711 is not None else 2  # bytes a sample
        self._resampler = (
            None if rate == SAMPLE_RATE else av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        )

    def decode(self, text: str, max_seconds: float) -> np.ndarray:
        """16 kHz float32 samples of one ``input_audio_buffer.append``; ``EventError`` when the audio
        is not base64, not whole 16-bit samples (PCM16), or longer than ``max_seconds``."""
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise EventError("input_audio_buffer.append: 'audio' is not valid base64", "invalid_audio",
                             param="audio") from None
        if len(data) % self._width:
            raise EventError(
                f"input_audio_buffer.append: 'audio' has {len(data)} bytes, an odd count: PCM16 samples "
                "are 2 bytes each", "invalid_audio", param="audio")
        seconds = len(data) / self._width / self.rate
        if seconds > max_seconds:
            raise EventError(
                f"input_audio_buffer.append: {seconds:.1f} s of audio in one event; at most {max_seconds:g} s "
                "(REALTIME_MAX_UTTERANCE_S): send it in smaller pieces", "audio_too_large", param="audio")
        pcm16 = self._g711.decode(data) if self._g711 is not None else np.frombuffer(data, dtype="<i2")
        samples = pcm16.astype(np.float32) / 32768.0
        if self._resampler is None or not len(samples):
            return samples
        frame = av.AudioFrame.from_ndarray(samples[None], format="flt", layout="mono")
        frame.sample_rate = self.rate
        frame.pts = None
        out = [piece.to_ndarray().reshape(-1) for piece in self._resampler.resample(frame)]
        return np.concatenate(out).astype(np.float32, copy=False) if out else np.zeros(0, np.float32)
