"""Word and character error rates as the evaluation scripts and tests report them.

Text is normalised with Whisper's BasicTextNormalizer (lower case, no punctuation), as in the
baselines of audio/README.md. jiwer is a development dependency, imported on use.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _normalizer():
    from transformers.models.whisper.english_normalizer import BasicTextNormalizer

    return BasicTextNormalizer()


def normalize(text: str) -> str:
    return _normalizer()(text).strip()


def wer(references: list[str], hypotheses: list[str]) -> float:
    import jiwer

    return jiwer.wer([normalize(t) for t in references], [normalize(t) for t in hypotheses])


def cer(references: list[str], hypotheses: list[str]) -> float:
    """Character error rate with all spaces removed (for Japanese and other unspaced scripts)."""
    import jiwer

    def squash(text: str) -> str:
        return "".join(normalize(text).split())

    return jiwer.cer([squash(t) for t in references], [squash(t) for t in hypotheses])


def cp_error_rate(reference: dict[str, str], hypothesis: dict[str, str], *, characters: bool = False) -> float:
    """Concatenated minimum-permutation error rate (cpWER; cpCER with ``characters``).

    Each side is one text per speaker (that speaker's words concatenated in time order). Speakers are
    paired one to one so that the summed edit distance is smallest (an assignment problem, solved
    exactly); unpaired speakers are scored against empty text. Divided by the reference's length.
    """
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    def units(text: str) -> str:
        text = normalize(text)
        return " ".join("".join(text.split())) if characters else text

    refs = [units(t) for t in reference.values()]
    hyps = [units(t) for t in hypothesis.values()]
    size = max(len(refs), len(hyps))
    refs += [""] * (size - len(refs))
    hyps += [""] * (size - len(hyps))
    costs = np.array([[_edits(ref, hyp) for hyp in hyps] for ref in refs])
    rows, cols = linear_sum_assignment(costs)
    total = sum(len(ref.split()) for ref in refs)
    return float(costs[rows, cols].sum()) / max(total, 1)


def _edits(reference: str, hypothesis: str) -> int:
    import jiwer

    ref, hyp = reference.split(), hypothesis.split()
    if not ref or not hyp:
        return len(ref) + len(hyp)
    out = jiwer.process_words(reference, hypothesis)
    return out.substitutions + out.deletions + out.insertions
