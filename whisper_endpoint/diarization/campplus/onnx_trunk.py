"""CAM++'s trunk (everything before its statistics pooling) run by ONNX Runtime, exported once per checkpoint.

The trunk is the diarizer's embedding cost (``../embedded/pooled.py`` runs it once over the input, in tiles), and its
convolutions run faster under ONNX Runtime than in torch on CPU, with the same frames to float32
rounding (``TOLERANCE``). It is exported on first use into the model cache, named by a hash of the
weights and the network code, and checked against torch on a probe signal before use
(``onnx_export.py``); wherever that fails, the trunk stays torch's. onnxruntime is already installed
for faster-whisper's VAD.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.diarization.campplus import onnx_export

TOLERANCE = 1e-3  # on the trunk's frames, against torch's
_PROBE_S = 3.0  # the probe signal's length (its fbank is the export's example input too)


def load(network, checkpoint: Path, code: Path, cache_dir: str | Path | None = None) -> onnx_export.Session | None:
    """The trunk's ONNX Runtime session for this CAM++ ``network`` (a ``CamPlusPlusEmbedding``): fbank
    (1, 80, frames) -> trunk frames (1, channels, frames / 2); or None. Exported into ``cache_dir`` (the
    model cache; None: the default one) when no copy is found."""
    fbank = _probe(network)
    export = onnx_export.Export(
        what="CAM++'s trunk", file_name=file_name(checkpoint, code), module=lambda: _Trunk(network.campplus),
        probe=fbank, expected=torch_frames(network, fbank), axes={"input": {2: "frames"}, "output": {2: "trunk_frames"}},
        tolerance=TOLERANCE,
    )
    return onnx_export.load(export, checkpoint.parent, cache_dir)


def file_name(checkpoint: Path, code: Path) -> str:
    """The weights, the network code and the exporter's version: a change to any makes a new export."""
    return onnx_export.keyed_name("campplus_trunk", (checkpoint, code, Path(__file__)))


class _Trunk(torch.nn.Module):
    def __init__(self, campplus):
        super().__init__()
        self.head = campplus.head
        self.body = campplus.xvector[:-2]  # as pooled.Trunk: everything but "stats" and "dense"

    def forward(self, fbank):
        return self.body(self.head(fbank))


def torch_frames(network, fbank: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return _Trunk(network.campplus)(fbank)


def _probe(network) -> torch.Tensor:
    """A deterministic signal's mean-normalised fbank, (1, 80, frames): a chirp with noise."""
    rate = SAMPLE_RATE
    t = np.arange(int(_PROBE_S * rate)) / rate
    noise = np.random.default_rng(0).standard_normal(len(t))
    samples = torch.from_numpy((0.3 * np.sin(2 * np.pi * (100 + 400 * t) * t) + 0.05 * noise).astype(np.float32))
    fbank = network.fbank(samples)
    return (fbank - fbank.mean(dim=0, keepdim=True)).T[None].contiguous()
