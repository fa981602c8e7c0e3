"""The transformers encoder through the request's kept outputs (asr/encoder_outputs.py), counted for its cost.

Language detection encodes each window and keeps its output (``encode_kept``); the pipeline's ``generate``
then calls the encoder on the same window's features, and gets the kept output instead of a second pass
(``install`` wraps the encoder's ``forward``: every caller goes through it, hooks and all). Only the windows
actually encoded count towards the request's encoder windows (cost.py).
"""

from __future__ import annotations

import numpy as np
import torch
from transformers.modeling_outputs import BaseModelOutput

from whisper_endpoint.asr import cost, encoder_outputs


def install(encoder) -> None:
    """``encoder`` (modified in place) takes a batch whose every window was kept from the store."""
    forward = encoder.forward

    def kept_forward(input_features=None, *args, **kwargs):
        store = encoder_outputs.kept()
        keys = [] if store is None or input_features is None or args else [_key(row) for row in input_features]
        if not keys or not all(key in store for key in keys):
            if input_features is not None:
                cost.count(input_features.shape[0])
            return forward(input_features, *args, **kwargs)
        hidden = torch.stack([store.pop(key) for key in keys]).to(input_features.dtype)
        return BaseModelOutput(last_hidden_state=hidden) if kwargs.get("return_dict", True) else (hidden,)

    encoder.forward = kept_forward


def encode_kept(encoder, features: torch.Tensor) -> torch.Tensor:
    """One window's encoder output (frames, d_model), kept for the window's decoding."""
    with torch.inference_mode():
        hidden = encoder(input_features=features).last_hidden_state[0]
    store = encoder_outputs.kept()
    if store is not None:
        store[_key(features[0])] = hidden
    return hidden


def forget(features: torch.Tensor) -> None:
    encoder_outputs.forget(_as_array(features[0]))


def _key(features: torch.Tensor) -> bytes:
    return encoder_outputs.key(_as_array(features))


def _as_array(features: torch.Tensor) -> np.ndarray:
    return features.detach().float().cpu().numpy()
