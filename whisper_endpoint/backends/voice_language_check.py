"""A voice whose language detection hesitates between two languages: decoded in both, the likelier kept.

Whisper's language token confuses close languages (Czech with Polish or Slovak) even pooled over
all of a voice's speech (language_rule.py). Its decoder tells them apart better: the same speech
decoded in the right language is likelier, token for token, than in a neighbour's. So a voice whose
second language is nearly as likely as its first (language_rule.AMBIGUOUS) gets its longest spans (up
to ``SAMPLE_S``) packed into one window, encoded once and decoded greedily in each of the two; the
one with the higher average log-probability per token is the voice's language. Only the top two are
compared: a third candidate is where the decoder tends to translate into fluent English instead.
"""

from __future__ import annotations

import numpy as np
from faster_whisper.audio import pad_or_trim
from faster_whisper.tokenizer import Tokenizer

from whisper_endpoint.core.types import SAMPLE_RATE

SAMPLE_S = 28.0  # the voice's speech decoded in each language: at most one window


def checker(model, audio: np.ndarray, spans: list[tuple[float, float]]):
    """``check(indices, candidates)``: of two candidate languages, the one ``model`` decodes the spans
    of those indices in ``spans`` (start, end in seconds of ``audio``) likelier in."""

    def check(indices: list[int], candidates: list[str]) -> str:
        kept, total = [], 0.0
        for start, end in sorted((spans[i] for i in indices), key=lambda span: span[0] - span[1]):  # longest first
            if total + end - start <= SAMPLE_S:
                kept.append(audio[int(start * SAMPLE_RATE): int(end * SAMPLE_RATE)])
                total += end - start
        if not kept:
            return candidates[0]
        features = pad_or_trim(model.feature_extractor(np.concatenate(kept))[..., :-1])
        encoded = model.encode(features)
        scores = {code: _score(model, encoded, code) for code in candidates}
        return max(scores, key=scores.get)

    return check


def _score(model, encoded, language: str) -> float:
    tokenizer = Tokenizer(model.hf_tokenizer, True, task="transcribe", language=language)
    prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    result = model.model.generate(encoded, [prompt], beam_size=1, max_length=model.max_length // 2,
                                  return_scores=True, suppress_blank=True)[0]
    return result.scores[0]  # the sum of the tokens' log-probabilities over their number
