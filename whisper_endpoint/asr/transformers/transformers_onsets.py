"""Word onsets on the transformers backend: token times at the onset head's attention peaks.

transformers times each token with the DTW over the alignment heads' cross-attention that generate
returned (``_extract_token_timestamps``); the pipeline then starts a word at its first token's time
and ends it at the next token's. For a model whose onset head word_onsets.py knows, each of those
times moves to the onset head's attention peak in the same row, from a little before the DTW time to
the next one, as the CTranslate2 backend does (alignment.py); the head's attention comes from the
same generate output, picked out of the beams as transformers picks the alignment heads'.
"""

from __future__ import annotations

import numpy as np
import torch

from whisper_endpoint.asr.word_times import word_onsets


def at_onsets(model):
    """``model`` (modified in place) with token times at the onsets, when its onset head is known."""
    config = model.config
    found = word_onsets.onset_head(config.decoder_layers, config.decoder_attention_heads, config.d_model,
                                   config.vocab_size, getattr(model.generation_config, "alignment_heads", None))
    if found is None:
        return model
    dtw_times = model._extract_token_timestamps

    def extract_token_timestamps(generate_outputs, alignment_heads, time_precision=0.02, num_frames=None,
                                 num_input_ids=None):
        times = dtw_times(generate_outputs, alignment_heads, time_precision, num_frames, num_input_ids)
        rows = _head_rows(generate_outputs, *found, num_input_ids)  # shape: (batch, rows, frames)
        first = num_input_ids or 0
        count = min(rows.shape[1] - first, times.shape[1] - 1 - first)
        for b in range(times.shape[0]):
            if count <= 0:
                break
            attention = rows[b, first: first + count, : _frames(num_frames, b, times.shape[0], rows.shape[-1])]
            dtw = times[b, first: first + count + 1].double().numpy() / time_precision
            onsets = word_onsets.onset_frames(attention.float().numpy(), dtw[:-1], dtw[1:])
            times[b, first: first + count] = torch.from_numpy(word_onsets.frame_time(onsets)).to(times.dtype)
            times[b, first + count:] = times[b, first + count - 1]
        return times

    model._extract_token_timestamps = extract_token_timestamps
    return model


def _head_rows(generate_outputs, layer: int, head: int, num_input_ids: int | None) -> torch.Tensor:
    """The head's cross-attention for every position of each returned sequence, the beams' rows picked
    as ``_extract_token_timestamps`` picks them."""
    weights = torch.cat([step[layer][:, head] for step in generate_outputs.cross_attentions], dim=1)
    if "beam_indices" not in generate_outputs:
        return weights
    length = int((generate_outputs.beam_indices != -1).sum(-1).max())
    beams = generate_outputs.beam_indices[:, :length]
    if num_input_ids is not None and num_input_ids > 1:  # the prefill step holds every input position's row
        beams = torch.cat([beams[:, :1].expand(-1, num_input_ids - 1), beams], dim=-1)
    beams = beams.masked_fill(beams == -1, 0)
    return torch.stack([weights[:, i].index_select(0, beams[:, i]) for i in range(beams.shape[1])], dim=1)


def _frames(num_frames, b: int, batch: int, total: int) -> int:
    """Encoder frames holding audio in sequence ``b`` (mel frames halved), as transformers crops them."""
    if num_frames is None:
        return total
    if isinstance(num_frames, int):
        return num_frames // 2
    values = np.asarray(num_frames.cpu() if isinstance(num_frames, torch.Tensor) else num_frames).reshape(-1)
    return int(np.repeat(values, max(1, batch // len(values)))[b]) // 2
