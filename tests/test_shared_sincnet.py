"""Segmentation with SincNet's first layer shared between windows gives what pyannote's own Inference gives.

Real segmentation-3.0 weights, real audio. The tolerance on the model's log-probabilities is 1e-3 (float32
rounding of a * conv(x) against conv(a * x); 3.2e-4 was the largest difference seen on the dev dialogues);
the segmentation the pipeline uses (hard powerset labels) must be identical.
"""

import numpy as np
import pytest
import torch

from support.paths import AUDIO
from support.audio import decode_reference

SCORE_TOLERANCE = 1e-3
RATE = 16000


@pytest.fixture(scope="module")
def segmentation_model():
    from pyannote.audio import Model

    from whisper_endpoint.diarization.checkpoints import segmentation_checkpoint

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield Model.from_pretrained(str(segmentation_checkpoint()), strict=False).eval()
    torch.set_num_threads(before)


def _inferences(model, batch_size=4):
    from pyannote.audio.core.inference import Inference

    from whisper_endpoint.diarization.embedded.shared_sincnet import SharedSincInference

    kwargs = dict(duration=10.0, step=1.0, skip_aggregation=True, batch_size=batch_size)
    return Inference(model, **kwargs), SharedSincInference(model, **kwargs)


# whole steps, a padded last window, one short window
@pytest.mark.parametrize("seconds", [20.0, 23.45, 7.5])
def test_segmentation_equals_pyannote(segmentation_model, seconds):
    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: round(seconds * RATE)]
    file = {"waveform": torch.from_numpy(samples)[None], "sample_rate": RATE}
    plain, shared = _inferences(segmentation_model)
    calls = []
    expected = plain(file)
    got = shared(file, hook=lambda **progress: calls.append(progress))
    assert got.data.shape == expected.data.shape
    assert got.sliding_window.step == expected.sliding_window.step
    assert np.array_equal(got.data, expected.data)
    assert calls[0]["completed"] == 0 and calls[-1]["completed"] == calls[-1]["total"] == len(expected.data)


def test_scores_within_tolerance(segmentation_model):
    """Before the powerset labels: each window's log-probabilities against PyanNet.forward's."""
    from whisper_endpoint.diarization.embedded.shared_sincnet import _after_first_pool, _FirstLayer

    samples = torch.from_numpy(decode_reference(AUDIO / "dialogues" / "fillets_cave.flac")[: 40 * RATE])
    layer = _FirstLayer(segmentation_model, samples, window_size=10 * RATE, step_size=RATE)
    span = range(3, 19)  # a span that does not start at the input's first window
    with torch.inference_mode():
        pooled = layer.windows(layer.over(span), span.start, range(5, 9))
        got = _after_first_pool(segmentation_model, pooled)
        windows = torch.stack([samples[i * RATE: i * RATE + 10 * RATE] for i in range(5, 9)])[:, None]
        expected = segmentation_model(windows)
    assert float((got - expected).abs().max()) < SCORE_TOLERANCE


def test_the_shared_pooling_gives_each_windows_own_abs_and_pooling_bit_for_bit(segmentation_model):
    """The span's groups pooled once for each of their 3 phases, against each window's first-layer output
    (its instance norm as an affine map of the shared convolution) through abs and the max pooling."""
    from whisper_endpoint.diarization.embedded.shared_sincnet import _FirstLayer

    samples = torch.from_numpy(decode_reference(AUDIO / "dialogues" / "fillets_cave.flac")[: 40 * RATE])
    layer = _FirstLayer(segmentation_model, samples, window_size=10 * RATE, step_size=RATE)
    span, batch = range(3, 19), range(9, 16)  # windows at all three phases (1600 frames apart: 1600 % 3 == 1)
    pool = segmentation_model.sincnet.pool1d[0]
    with torch.inference_mode():
        got = layer.windows(layer.over(span), span.start, batch)
        output = layer.output(span)
        expected = []
        for i in batch:
            window = samples[i * RATE: i * RATE + 10 * RATE]
            scale = layer.norm.weight[0] / torch.sqrt(window.var(unbiased=False) + layer.norm.eps)
            shift = layer.norm.bias[0] - scale * window.mean()
            at = (i - span.start) * RATE // layer.stride
            expected.append(pool(torch.abs(output[:, at:at + layer.frames] * scale + shift * layer.filter_sums)))
    assert torch.equal(got, torch.stack(expected))
