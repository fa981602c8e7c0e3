"""The segmentation model after SincNet's first layer and pooling, run by ONNX Runtime.

shared_sincnet.py computes segmentation-3.0's first layer, its abs and its pooling once per span of windows;
the rest of the model (SincNet's later layers, the LSTM, the linear layers and the classifier) runs per
window and is most of the diarizer's time. On ONNX Runtime, 4 windows a call, that rest costs 0.8-0.9x
torch's CPU time on one thread (24.7-27.8 against 30.4-31.5 ms a window, 48 windows of a dev dialogue;
ONNX Runtime's LSTM alone 0.9x torch's), with log-probabilities within 4e-5 of torch's and the same hard
labels on every frame (``scripts.measure_segmentation_onnx``). It is exported into the model cache and
checked against torch on a probe signal before use (``onnx_export.py``); wherever that fails, torch runs it.

In the whole pipeline the gain did not hold: over five files, three runs each, segmentation cost 0.85-1.10x
torch's and the diarizer 0.90-1.06x, about even on average, so the pipeline uses it only when asked
(``OfflineSpeakerDiarization(onnx_segmentation=True)``, a pipeline parameter).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from pyannote.audio import __version__ as pyannote_version

from whisper_endpoint.diarization import onnx_export, shared_sincnet

TOLERANCE = 1e-3  # on the log-probabilities, against torch's (as tests/test_shared_sincnet.py)
_PROBE_WINDOWS = 2


class _Rest(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pooled):
        return shared_sincnet._after_first_pool(self.model, pooled)


def load(model, checkpoint: Path, cache_dir: str | Path | None = None) -> onnx_export.Session | None:
    """(windows, 80, pooled frames) -> the model's log-probabilities, on ONNX Runtime; None where the model
    is not one shared_sincnet shares the first layer of, its checkpoint is not one local file (a folder or
    a Hub id: nothing to key the export by), or no matching export can be had."""
    window = model.audio.get_num_samples(model.specifications.duration)
    step = window // 10
    if not (checkpoint.is_file() and shared_sincnet._shareable(model, step)):
        return None
    probe = _probe(model, window, step)
    with torch.inference_mode():
        expected = shared_sincnet._after_first_pool(model, probe)
    # The model's code is pyannote's, shared_sincnet's and _Rest: any changing makes a new export.
    name = onnx_export.keyed_name("segmentation_rest", (checkpoint, Path(shared_sincnet.__file__), Path(__file__)),
                                  pyannote_version)
    export = onnx_export.Export(
        what="the segmentation model", file_name=name, module=lambda: _Rest(model), probe=probe, expected=expected,
        axes={"input": {0: "windows", 2: "frames"}, "output": {0: "windows"}}, tolerance=TOLERANCE,
    )
    return onnx_export.load(export, checkpoint.parent, cache_dir)


def _probe(model, window: int, step: int) -> torch.Tensor:
    """The pooled first layer of ``_PROBE_WINDOWS`` windows of a deterministic signal (a chirp with noise)."""
    rate = model.audio.sample_rate
    t = np.arange(window + (_PROBE_WINDOWS - 1) * step) / rate
    noise = np.random.default_rng(0).standard_normal(len(t))
    samples = torch.from_numpy((0.3 * np.sin(2 * np.pi * (100 + 400 * t) * t) + 0.05 * noise).astype(np.float32))
    layer = shared_sincnet._FirstLayer(model, samples, window, step)
    span = range(_PROBE_WINDOWS)
    return layer.windows(layer.over(span), 0, span).clone()
