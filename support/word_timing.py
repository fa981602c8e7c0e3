"""Word timing against exact word times: the field's measures of how far word timestamps are off.

Words are dicts ``{"word", "start", "end"}`` (a hypothesis word may say ``"text"``). Each is normalised
on its own by Whisper's English normaliser, spaces removed ("don't" -> "donot" on both sides); words
that normalise to nothing are dropped. The two sequences are aligned by jiwer (Levenshtein) and only
the words it calls equal are timed. Numbers spelled in words ("forty two") do not match Whisper's
digits ("42"): they count in the WER (normalised sentence-wise, where they match) but are not timed.
Errors are hypothesis minus reference, in seconds.
"""

from __future__ import annotations

import jiwer
import numpy as np


def _normaliser():
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    return EnglishTextNormalizer({})


def score(reference_words: list[dict], hypothesis_words: list[dict]) -> dict:
    """WER counts and the timing errors of the matched words (``pairs``), summarised (see summarise)."""
    normalise = _normaliser()

    def text(word: dict) -> str:
        return word.get("word", word.get("text", ""))

    ref = [(normalise(text(w)).replace(" ", ""), w) for w in reference_words]
    hyp = [(normalise(text(w)).replace(" ", ""), w) for w in hypothesis_words]
    ref, hyp = [(n, w) for n, w in ref if n], [(n, w) for n, w in hyp if n]
    measures = jiwer.process_words(normalise(" ".join(map(text, reference_words))),
                                   normalise(" ".join(map(text, hypothesis_words))) or "<empty>")
    pairs = []
    if ref and hyp:
        alignment = jiwer.process_words(" ".join(n for n, _ in ref), " ".join(n for n, _ in hyp)).alignments[0]
        for chunk in alignment:
            if chunk.type == "equal":
                for i, j in zip(range(chunk.ref_start_idx, chunk.ref_end_idx),
                                range(chunk.hyp_start_idx, chunk.hyp_end_idx)):
                    r, h = ref[i][1], hyp[j][1]
                    pairs.append((h["start"] - r["start"], h["end"] - r["end"]))
    errors = measures.substitutions + measures.deletions + measures.insertions
    ref_count = measures.substitutions + measures.deletions + measures.hits
    return {"ref_words": ref_count, "errors": errors, "pairs": pairs}


def summarise(pairs: list[tuple[float, float]]) -> dict:
    """Mean signed and absolute start and end errors (ms), AAS (the mean of the two absolute errors, the
    field's "accumulated average shift"), and the shares of words with both edges within 50 and 100 ms."""
    if not pairs:
        return {"matched": 0}
    start, end = np.array(pairs).T
    both = np.maximum(abs(start), abs(end))
    ms = lambda x: round(float(x) * 1000, 1)  # noqa: E731
    return {"matched": len(pairs), "start_mean_ms": ms(start.mean()), "end_mean_ms": ms(end.mean()),
            "start_mae_ms": ms(abs(start).mean()), "end_mae_ms": ms(abs(end).mean()),
            "aas_ms": ms((abs(start).mean() + abs(end).mean()) / 2),
            "within_50ms": round(float(np.mean(both <= 0.05)), 4), "within_100ms": round(float(np.mean(both <= 0.1)), 4)}
