"""Whether a recording came through a telephone-band line (issue 71).

A line sampled at 8 kHz (G.711, GSM, a narrowband codec) leaves nothing above 4 kHz of the 16 kHz
input; wideband speech keeps fricatives and breath there, its share of the power 15-40 dB under the
whole (docs/notes/2026-12-08-telephone-clustering.md). The clustering takes that as the sign of a narrow
channel: CAM++ hears two voices closer through it, so it links them at a lower distance (clustering.py).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import welch

from whisper_endpoint.core.types import SAMPLE_RATE

EDGE_HZ = 4000  # the Nyquist frequency of a line at 8 kHz
NARROWBAND_DB = -42.0  # the power above EDGE_HZ against the whole, under which the input is narrowband
_PIECES, _PIECE_S = 64, 2.0  # the power is measured on at most this much, spread over the recording


def high_band_db(samples: np.ndarray) -> float:
    """The share of ``samples``' power above ``EDGE_HZ``, in dB (-inf for silence)."""
    piece = round(_PIECE_S * SAMPLE_RATE)
    if len(samples) > _PIECES * piece:
        starts = np.linspace(0, len(samples) - piece, _PIECES).astype(np.int64)
        samples = np.concatenate([samples[start: start + piece] for start in starts])
    frequencies, power = welch(np.asarray(samples, dtype=np.float64), fs=SAMPLE_RATE, nperseg=512)
    total = power.sum()
    if total <= 0:
        return float("-inf")
    return float(10 * np.log10(max(power[frequencies >= EDGE_HZ].sum() / total, 1e-30)))


def narrowband(samples: np.ndarray) -> bool:
    """Whether ``samples`` (16 kHz) sound like a telephone line: no power above 4 kHz to speak of."""
    return len(samples) >= 512 and float("-inf") < high_band_db(samples) < NARROWBAND_DB  # silence: no line
