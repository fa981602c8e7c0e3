"""Segmentation windows with SincNet's first filterbank computed once over the input, not once per window.

At a step of a tenth of the window every sample lies in ten windows. segmentation-3.0's first layer is
linear and the window's instance norm before it an affine map of the window, so a window's first-layer
output is a slice of the input's, scaled and shifted by the window's own statistics:

    conv(w * (x - mean) / sqrt(var + eps) + b) = a * conv(x) + c * sum(filter),
    a = w / sqrt(var + eps),  c = b - a * mean

The layer's abs and max pooling are shared too: the largest |a * y + c| of a group of frames is at the
group's largest or smallest y, so the span is max- and min-pooled once for each way a window's groups
fall on it, and each window takes its groups' two values (the same floats as its own abs-then-pool).
Everything after that runs per window, as PyanNet.forward does; the outputs equal pyannote's to float32
rounding (tests/test_shared_sincnet.py), and any other model, or the zero-padded last window, takes
pyannote's own path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from pyannote.audio.core.inference import Inference
from pyannote.audio.models.segmentation import PyanNet
from pyannote.audio.utils.multi_task import map_with_specifications
from pyannote.core import SlidingWindow, SlidingWindowFeature

# Windows whose first layer is computed in one convolution: large enough that the LSTM's small matrix
# products fill the cores better than the pipeline's batches of 4, small enough that the span's output
# stays in the cache (16 windows at a 1 s step: 80 x 40,000 floats). The outputs are the same bit for bit.
SPAN_WINDOWS = 16


class SharedSincInference(Inference):
    """pyannote's Inference (skip_aggregation, as SpeakerDiarization makes it) with the shared first layer."""

    def slide(self, waveform: torch.Tensor, sample_rate: int, hook: Callable | None):
        window_size = self.model.audio.get_num_samples(self.duration)
        step_size = round(self.step * sample_rate)
        channels, num_samples = waveform.shape
        if not (_shareable(self.model, step_size) and self.skip_aggregation and channels == 1
                and num_samples >= window_size):
            return super().slide(waveform, sample_rate, hook)
        num_chunks = (num_samples - window_size) // step_size + 1
        has_last_chunk = (num_samples - window_size) % step_size > 0
        total = num_chunks + has_last_chunk
        if hook is not None:
            hook(completed=0, total=total)
        layer = _FirstLayer(self.model, waveform[0].to(self.device), window_size, step_size)
        outputs = []
        for span_start in range(0, num_chunks, SPAN_WINDOWS):
            span = range(span_start, min(span_start + SPAN_WINDOWS, num_chunks))
            outputs.append(self._converted(self._scores(layer, span)))
            if hook is not None:
                hook(completed=span.stop, total=total)
        if has_last_chunk:
            # The zero-padded last window: pyannote's own path, exactly as Inference.slide pads it.
            last_chunk = F.pad(waveform[:, num_chunks * step_size:], (0, window_size - (num_samples - num_chunks * step_size)))
            outputs.append(self.infer(last_chunk[None]))
            if hook is not None:
                hook(completed=total, total=total)
        frames = SlidingWindow(start=0.0, duration=self.duration, step=self.step)
        return SlidingWindowFeature(np.vstack(outputs), frames)

    def _scores(self, layer: _FirstLayer, span: range) -> torch.Tensor:
        """The model's output for the windows of ``span``."""
        pools = layer.over(span)
        batches = [range(first, min(first + self.batch_size, span.stop))
                   for first in range(span.start, span.stop, self.batch_size)]
        with torch.inference_mode():
            features = [_sincnet_rest(self.model, layer.windows(pools, span.start, batch)) for batch in batches]
            # The LSTM and what follows on the whole span at once (see SPAN_WINDOWS).
            return _after_sincnet(self.model, torch.cat(features))

    def _converted(self, scores: torch.Tensor) -> np.ndarray:
        return map_with_specifications(
            self.model.specifications, lambda output, conversion, **_: conversion(output).cpu().numpy(),
            scores, self.conversion,
        )


def _shareable(model, step_size: int) -> bool:
    """The model is PyanNet as segmentation-3.0 builds it (its first pooling a plain max over separate
    groups of frames), and windows start on the first layer's stride."""
    if not isinstance(model, PyanNet) or not model.hparams.lstm.get("monolithic", False):
        return False
    encoder, pool = model.sincnet.conv1d[0], model.sincnet.pool1d[0]
    plain_pool = (isinstance(pool, torch.nn.MaxPool1d) and pool.stride == pool.kernel_size and pool.padding == 0
                  and pool.dilation == 1 and not pool.ceil_mode and not pool.return_indices)
    return plain_pool and getattr(encoder, "padding", None) == 0 and step_size % encoder.stride == 0


@dataclass
class _Pools:
    """The largest and smallest first-layer output of each group of ``kernel`` frames of a span, for each
    way the groups can fall (phase p: groups start at frames p, p + kernel, ...)."""

    highs: list[torch.Tensor]  # phase -> (80, groups)
    lows: list[torch.Tensor]


class _FirstLayer:
    """The input's first-layer output, computed and pooled a span of windows at a time, and each window's share
    of it after the layer's abs and pooling."""

    def __init__(self, model, samples: torch.Tensor, window_size: int, step_size: int):
        encoder = model.sincnet.conv1d[0]
        self.norm = model.sincnet.wav_norm1d
        with torch.inference_mode():
            self.filters = encoder.get_filters()  # (80, 1, taps)
            self.filter_sums = self.filters.sum(dim=(1, 2))[:, None]  # (80, 1)
        self.samples = samples
        self.stride = encoder.stride
        self.window_size = window_size
        self.step_size = step_size
        self.frames = (window_size - self.filters.shape[-1]) // self.stride + 1  # first-layer frames per window
        self.kernel = model.sincnet.pool1d[0].kernel_size
        self.groups = self.frames // self.kernel  # pooled frames per window

    def output(self, span: range) -> torch.Tensor:
        """(80, frames) over the samples of windows ``span``."""
        start = span.start * self.step_size
        stop = (span.stop - 1) * self.step_size + self.window_size
        with torch.inference_mode():
            return F.conv1d(self.samples[None, None, start:stop], self.filters, stride=self.stride)[0]

    def over(self, span: range) -> _Pools:
        """The pools of the first-layer output over the samples of windows ``span``."""
        output = self.output(span)
        with torch.inference_mode():
            highs = [F.max_pool1d(output[:, phase:], self.kernel) for phase in range(self.kernel)]
            output.neg_()
            return _Pools(highs, [F.max_pool1d(output[:, phase:], self.kernel).neg_() for phase in range(self.kernel)])

    def windows(self, pools: _Pools, span_start: int, batch: range) -> torch.Tensor:
        """(len(batch), 80, groups): the first layer's output after its abs and pooling, for each window of
        ``batch``: the larger |scale * y + bias| of each group's highest and lowest y."""
        offset = self.step_size // self.stride
        pieces = []
        with torch.inference_mode():
            for i in batch:
                # The window's instance norm, as an affine map of its samples (biased variance, as InstanceNorm).
                samples = self.samples[i * self.step_size:i * self.step_size + self.window_size]
                scale = self.norm.weight[0] / torch.sqrt(samples.var(unbiased=False) + self.norm.eps)
                bias = (self.norm.bias[0] - scale * samples.mean()) * self.filter_sums
                phase, group = divmod((i - span_start) * offset, self.kernel)[::-1]
                high = pools.highs[phase][:, group:group + self.groups]
                low = pools.lows[phase][:, group:group + self.groups]
                pieces.append(torch.maximum((high * scale + bias).abs_(), (low * scale + bias).abs_()))
            return torch.stack(pieces)


def _after_first_pool(model, pooled: torch.Tensor) -> torch.Tensor:
    """PyanNet.forward (and SincNet.forward) from the first layer's abs and pooling on."""
    return _after_sincnet(model, _sincnet_rest(model, pooled))


def _sincnet_rest(model, pooled: torch.Tensor) -> torch.Tensor:
    """SincNet.forward after the first layer's abs and pooling: (batch, 80, groups) -> (batch, 60, model frames)."""
    sincnet = model.sincnet
    outputs = F.leaky_relu(sincnet.norm1d[0](pooled))
    for c in range(1, len(sincnet.conv1d)):
        outputs = F.leaky_relu(sincnet.norm1d[c](sincnet.pool1d[c](sincnet.conv1d[c](outputs))))
    return outputs


def _after_sincnet(model, features: torch.Tensor) -> torch.Tensor:
    """PyanNet.forward after SincNet: the LSTM, the linear layers and the classifier."""
    outputs, _ = model.lstm(features.transpose(1, 2))  # batch feature frame -> batch frame feature
    if model.hparams.linear["num_layers"] > 0:
        for linear in model.linear:
            outputs = F.leaky_relu(linear(outputs))
    return model.activation(model.classifier(outputs))
