"""G.711 (ITU-T): telephone audio, 8 kHz, one byte a sample, mu-law (North America, Japan) or A-law
(elsewhere). It has no header, so the sender says which law and rate it is.

Decoded by FFmpeg (PyAV's ``pcm_mulaw`` / ``pcm_alaw``), the decoder that reads WAV-wrapped G.711 (format
tags 7 and 6) in files: one decoder for every G.711 the server takes, and no table of our own to get wrong.
Headerless bytes sent as a file get a WAV header (``as_wav``), so they take the file path with its limits.
"""

from __future__ import annotations

import struct

import av
import numpy as np

RATE = 8000  # G.711's rate (RFC 3551: PCMU and PCMA are 8 kHz)
# law -> FFmpeg's codec, WAV format tag (RFC 2361: WAVE_FORMAT_MULAW 7, WAVE_FORMAT_ALAW 6)
LAWS = {"mulaw": ("pcm_mulaw", 7), "alaw": ("pcm_alaw", 6)}
MEDIA_TYPES = {"audio/pcmu": "mulaw", "audio/pcma": "alaw"}  # RFC 3551's names, OpenAI's GA formats too


class Decoder:
    """Bytes of one law to int16 samples. G.711 keeps no state between bytes, so any piece decodes
    alone: one decoder serves a whole live session."""

    def __init__(self, law: str, rate: int = RATE):
        self._context = av.CodecContext.create(LAWS[law][0], "r")
        self._context.sample_rate = rate
        self._context.layout = "mono"

    def decode(self, data: bytes) -> np.ndarray:
        if not data:
            return np.zeros(0, np.int16)
        frames = self._context.decode(av.Packet(data))
        # shape: (1, n) int16 per frame (FFmpeg's G.711 decoders give s16)
        return np.concatenate([frame.to_ndarray().reshape(-1) for frame in frames]).astype(np.int16, copy=False)


def as_wav(data: bytes, law: str, rate: int = RATE) -> bytes:
    """Headerless G.711 as a WAV file (mono, 8 bits a sample) that FFmpeg decodes like any other."""
    tag = LAWS[law][1]
    fmt = struct.pack("<HHIIHHH", tag, 1, rate, rate, 1, 8, 0)  # 18 bytes: cbSize 0, as non-PCM tags need
    pad = b"\0" * (len(data) % 2)  # RIFF chunks are word-aligned
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data + pad
    return b"RIFF" + struct.pack("<I", len(body)) + body
