"""The encoder on CPU a few windows at a time (asr/ctranslate2/encoding.py, issue #36): the same encoder output to
the bit as one call on the whole batch, for a smaller peak of memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from faster_whisper import WhisperModel

from support.audio import decode_reference
from support.measure import peak_rss_mib, reset_peak_rss, rss_mib
from whisper_endpoint.asr import cost
from whisper_endpoint.asr.ctranslate2.encoding import CPU_PIECE

# slow: the encoder's peak memory, measured
pytestmark = pytest.mark.slow

DIALOGUE = Path(__file__).resolve().parents[1] / "audio" / "dialogues" / "fillets_barrel.flac"  # 125 s
WINDOW, STEP = 30 * 16000, 15 * 16000  # distinct windows, overlapping to fit seven in the dialogue


def _features(model, windows: int) -> np.ndarray:
    """(windows, 80, 3000): 30 s windows of the dialogue, as the batched pipeline stacks them."""
    samples = decode_reference(DIALOGUE)
    assert len(samples) >= (windows - 1) * STEP + WINDOW
    return np.stack([model.feature_extractor(samples[i * STEP:i * STEP + WINDOW])[:, :3000]
                     for i in range(windows)]).astype(np.float32)


def _peak_rise_mib(call) -> tuple[np.ndarray, float]:
    """``call``'s result (as an array) and how far it raised the process's peak RSS over its RSS before."""
    reset_peak_rss()
    before = rss_mib()
    result = np.array(call())  # a copy, taken before the peak is read
    return result, peak_rss_mib() - before


def test_the_encoder_in_pieces_gives_the_whole_batchs_output_with_a_lower_peak(tiny_handler):
    model = tiny_handler.asr.model  # embedded:tiny.en's faster-whisper model, on CPU
    assert model.model.device == "cpu"
    features = _features(model, 3 * CPU_PIECE + 1)  # whole pieces and a remainder
    model.encode(features[:1])  # warm-up: the first call allocates what every call reuses
    # The pieces first: memory they leave pooled (the allocator's, the heap's) lowers the whole batch's rise,
    # so a pieces path that does not run (the whole batch twice) fails here.
    with cost.counting(len(features) * 30.0) as counter:
        pieces, pieces_rise = _peak_rise_mib(lambda: model.encode(features))
    whole, whole_rise = _peak_rise_mib(lambda: WhisperModel.encode(model, features))
    assert counter.used == len(features)  # each window counted once toward the request's bound
    assert pieces.shape == whole.shape == (len(features), 1500, 384)
    assert np.array_equal(pieces, whole)
    # tiny's attention scores are ~54 MB a window: 7 windows at once against 2
    assert pieces_rise < 0.6 * whole_rise, (pieces_rise, whole_rise)
