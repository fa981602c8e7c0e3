"""The segmentation model's LSTM in bfloat16, on CPUs with bfloat16 arithmetic of their own: opt-in.

segmentation-3.0's 4-layer bidirectional LSTM runs over every frame of every 10 s window, ten windows
deep at the default step: about a third of the diarizer's CPU time on one thread. oneDNN runs its steps
in bfloat16 on CPUs with AVX512_BF16 or AMX in about half float32's time (16 windows of 589 frames: 46
against 88-96 ms per 4 windows, one thread). The rest of the model stays float32: the linear layers and
the classifier after the LSTM take its output cast back to float32.

It is not the same arithmetic. On the evaluation files (``scripts.evaluate_speaker_count --params
'{"bf16_lstm": true}'``, results/diarization_bf16_lstm.json) every speaker count stayed the same and the
dev files, the Japanese meeting and the 13.4 min file kept their DER within 0.21 points, but 6 of the 22
alike-voice dialogues moved by more than 0.3 points, both ways (one by +6.7, the tuning set's mean 7.33 ->
7.77%), and that one by as much again on dithered copies of the files (results/diarization_der_spread.json).
So it is off unless a pipeline asks for it (``bf16_lstm: true`` in its parameters). Where the CPU has no
bfloat16 of its own (older x86, ARM, as torch reports it) it stays off even then: emulated bfloat16 is
slower than float32.
"""

from __future__ import annotations

import copy
import logging

import torch

logger = logging.getLogger(__name__)


def native_bf16() -> bool:
    """Whether this CPU does bfloat16 arithmetic itself (x86 AVX512_BF16 or AMX), per torch."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


class BFloat16LSTM:
    """A bfloat16 copy of ``lstm`` called as the float32 one: float32 in, (float32 output, None) out."""

    def __init__(self, lstm: torch.nn.LSTM):
        self.lstm = copy.deepcopy(lstm).to(torch.bfloat16).eval()

    def __call__(self, features: torch.Tensor) -> tuple[torch.Tensor, None]:
        outputs, _ = self.lstm(features.to(torch.bfloat16))
        return outputs.float(), None


def for_pipeline(lstm: torch.nn.LSTM, asked: bool) -> BFloat16LSTM | None:
    """The bfloat16 LSTM where it was asked for and this CPU runs bfloat16 itself; else None (float32)."""
    if not asked:
        return None
    if not native_bf16():
        logger.warning("bf16_lstm: this CPU has no bfloat16 arithmetic of its own; the LSTM stays float32")
        return None
    return BFloat16LSTM(lstm)
