"""One decoder head's cross-attention for a CTranslate2 model, computed in numpy from its model.bin.

CTranslate2 returns only the DTW path of its word alignment, not the attention behind it, and the
word onsets (word_onsets.py) need one head's attention itself. The decoder runs here up to that head's
layer: token and position embeddings, then per layer self-attention (causal), cross-attention over
the encoder output and the feed-forward block, all pre-norm as in Whisper; the last layer stops at
the head's attention weights. float32 throughout, on the encoder output CTranslate2 already computed;
the weights are read from the memory-mapped file at each call rather than kept as float32 copies.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
from scipy.special import erf

from whisper_endpoint.asr.ctranslate2.ct2_tensors import ModelBin
from whisper_endpoint.asr.word_times.word_onsets import onset_head

logger = logging.getLogger(__name__)


class HeadAttention:
    def __init__(self, model: ModelBin, layer: int, head: int, heads: int):
        self.model, self.layer, self.head, self.heads = model, layer, head, heads

    @classmethod
    def onset_head_of(cls, model_dir: str | Path) -> "HeadAttention | None":
        """The onset head of the model in ``model_dir`` when it is a known one (word_onsets.py), else None."""
        model_dir = Path(model_dir)
        try:
            model = ModelBin(model_dir / "model.bin")
            config = json.loads((model_dir / "config.json").read_text())
        except (OSError, ValueError) as exc:  # a model.bin this reader does not know: DTW times only
            logger.info("no word onsets for %s: %s", model_dir, exc)
            return None
        vocabulary, d_model = model.stored("decoder/embeddings/weight").shape
        layers = len({name.split("/")[1] for name in model.names() if name.startswith("decoder/layer_")} - {"layer_norm"})
        heads = int(model.stored("decoder/num_heads")) if "decoder/num_heads" in model else d_model // 64
        found = onset_head(layers, heads, d_model, vocabulary, config.get("alignment_heads"))
        return None if found is None else cls(model, *found, heads)

    def __call__(self, encoded: np.ndarray, tokens: list[int]) -> np.ndarray:
        """Attention weights, shape (len(tokens), frames), of the head for each input position."""
        w = self._weights
        x = self.model.stored("decoder/embeddings/weight")[tokens].astype(np.float32)
        x += w("decoder/position_encodings/encodings")[: len(tokens)]
        causal = np.triu(np.full((len(tokens), len(tokens)), -np.inf, dtype=np.float32), 1)
        for i in range(self.layer + 1):
            p = f"decoder/layer_{i}/"
            q, k, v = np.split(_linear(_norm(x, w, p + "self_attention/layer_norm"), w, p + "self_attention/linear_0"), 3, -1)
            x += _linear(self._attend(q, k, v, causal), w, p + "self_attention/linear_1")
            q = _linear(_norm(x, w, p + "attention/layer_norm"), w, p + "attention/linear_0")
            kv_weight, kv_bias = w(p + "attention/linear_1/weight"), w(p + "attention/linear_1/bias")
            if i == self.layer:  # this head's keys only (the first half of the rows are the keys)
                size = q.shape[-1] // self.heads
                rows = slice(self.head * size, (self.head + 1) * size)
                keys = encoded @ kv_weight[rows].T + kv_bias[rows]
                return _softmax(q[:, rows] @ keys.T / np.sqrt(size))
            k, v = np.split(encoded @ kv_weight.T + kv_bias, 2, -1)
            x += _linear(self._attend(q, k, v), w, p + "attention/linear_2")
            hidden = _linear(_norm(x, w, p + "ffn/layer_norm"), w, p + "ffn/linear_0")
            x += _linear(0.5 * hidden * (1 + erf(hidden / np.sqrt(2))), w, p + "ffn/linear_1")  # exact GELU
        raise AssertionError("unreachable: the loop returns at the head's layer")

    def _weights(self, name: str) -> np.ndarray:
        return self.model.array(name)

    def _attend(self, q, k, v, mask=None):
        # shape: (heads, positions, head size)
        q, k, v = (t.reshape(len(t), self.heads, -1).transpose(1, 0, 2) for t in (q, k, v))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores += mask
        out = _softmax(scores) @ v
        return out.transpose(1, 0, 2).reshape(q.shape[1], -1)


def _norm(x, w, prefix):
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-5) * w(prefix + "/gamma") + w(prefix + "/beta")


def _linear(x, w, prefix):
    return x @ w(prefix + "/weight").T + w(prefix + "/bias")


def _softmax(x):
    x = np.exp(x - x.max(-1, keepdims=True))
    return x / x.sum(-1, keepdims=True)
