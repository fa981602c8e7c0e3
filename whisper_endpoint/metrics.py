"""Word and character error rates as the evaluation scripts and tests report them.

Text is normalised with Whisper's BasicTextNormalizer (lower case, no punctuation), as in the
baselines of ../shared/audio/README.md. jiwer is a development dependency, imported on use.
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
