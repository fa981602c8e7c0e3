"""Whisper's confidence on the transformers backend, from token scores (``return_confidence``).

transformers' pipeline returns text and times, not the scores it decoded with. So the transcript is
scored once more by the same model, teacher-forced: the segments, grouped into windows of at most
30 s (each group one encoder pass and one decoder pass, no generation), are fed after the request's
prompt and Whisper's start tokens, and each token's log-probability is read off. That gives what
faster-whisper reports: a word's ``probability`` (the mean of its tokens' probabilities), a window's
``avg_logprob`` (sum of its tokens' log-probabilities, end of text included, over their count + 1) and
``no_speech_prob`` (the probability of ``<|nospeech|>`` after ``<|startoftranscript|>``), a segment's
``compression_ratio`` (zlib, over its text) and the ``temperature`` asked for. The windows are scored
without timestamp tokens, so the numbers are close to, not equal to, those of the decode itself. A
segment longer than 30 s (``return_timestamps: none`` on long audio) gets no scores.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from whisper_endpoint.asr.long_form.failed_windows import compression_ratio
from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Word

WINDOW_S = 30.0
LEAD_S = 0.5  # the window starts a little before its first segment (segment starts are approximate)



def scored(backend, samples: np.ndarray, segments: list[Segment], generate_kwargs: dict,
           temperature: float) -> tuple[list[Segment], int]:
    """``segments`` with their confidence, and the windows encoded to score them; ``backend`` is the
    TransformersBackend that decoded them."""
    result, windows = [], 0
    for group in _groups(segments):
        language = group[0].language or generate_kwargs.get("language")  # the language it was decoded in
        scores = _score(backend, samples, group, {**generate_kwargs, "language": language})
        windows += scores is not None
        for segment, (words, window) in zip(group, scores or [(s.words, {}) for s in group]):
            result.append(replace(segment, words=words, compression_ratio=compression_ratio(segment.text.strip()),
                                  temperature=float(temperature), **window))
    return result, windows


def _groups(segments: list[Segment]) -> list[list[Segment]]:
    groups: list[list[Segment]] = []
    for segment in segments:
        if groups and segment.end - max(0.0, groups[-1][0].start - LEAD_S) <= WINDOW_S:
            groups[-1].append(segment)
        else:
            groups.append([segment])
    return groups


def _pieces(segment: Segment) -> list[str]:
    return [word.text for word in segment.words] if segment.words else [segment.text]


def _score(backend, samples: np.ndarray, group: list[Segment], generate_kwargs: dict):
    """Per segment: its words with their probability, and the window's avg_logprob and no_speech_prob;
    None when the group does not fit one window or one decoder context."""
    import torch

    start = max(0.0, group[0].start - LEAD_S)
    if group[-1].end - start > WINDOW_S + 1:
        return None
    tokenizer = backend.tokenizer
    pieces = [[tokenizer(text, add_special_tokens=False).input_ids for text in _pieces(s)] for s in group]
    text_ids = [i for segment in pieces for piece in segment for i in piece]
    prompt = generate_kwargs.get("prompt_ids")
    prompt = [] if prompt is None else [int(i) for i in prompt]
    prefix = prompt + _start_tokens(backend, generate_kwargs)
    if len(prefix) + len(text_ids) + 1 > backend.model.config.max_target_positions:
        return None
    window = samples[round(start * SAMPLE_RATE): round((start + WINDOW_S) * SAMPLE_RATE)]
    features = backend.pipe.feature_extractor(window, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features
    ids = torch.tensor([prefix + text_ids], device=backend.device)
    with torch.inference_mode():
        logits = backend.model(input_features=features.to(backend.device, backend.dtype), decoder_input_ids=ids,
                               use_cache=False).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    targets = text_ids + [tokenizer.eos_token_id]
    first = len(prefix) - 1  # the logits at position p predict token p + 1
    token_logprobs = logprobs[torch.arange(first, first + len(targets)), torch.tensor(targets)].tolist()
    window_scores = {"avg_logprob": sum(token_logprobs) / len(targets),
                     "no_speech_prob": _no_speech(backend, logprobs[len(prompt)])}
    return _per_segment(group, pieces, token_logprobs, window_scores)


def _per_segment(group, pieces, token_logprobs, window_scores):
    result, position = [], 0
    for segment, segment_pieces in zip(group, pieces):
        probabilities = []
        for piece in segment_pieces:
            values = [math.exp(lp) for lp in token_logprobs[position: position + len(piece)]]
            probabilities.append(sum(values) / len(values) if values else None)
            position += len(piece)
        words = None
        if segment.words:
            words = tuple(Word(w.start, w.end, w.text, p) for w, p in zip(segment.words, probabilities))
        result.append((words, window_scores))
    return result


def _start_tokens(backend, generate_kwargs: dict) -> list[int]:
    """<|startoftranscript|>, the language and task (multilingual models), <|notimestamps|>."""
    names = ["<|startoftranscript|>"]
    if backend.is_multilingual:
        names += [f"<|{generate_kwargs.get('language') or 'en'}|>", f"<|{generate_kwargs.get('task', 'transcribe')}|>"]
    names.append("<|notimestamps|>")
    return backend.tokenizer.convert_tokens_to_ids(names)


def _no_speech(backend, logprobs) -> float | None:
    vocab = backend.tokenizer.get_vocab()
    token = vocab.get("<|nospeech|>", vocab.get("<|nocaptions|>"))
    return None if token is None else math.exp(float(logprobs[token]))
