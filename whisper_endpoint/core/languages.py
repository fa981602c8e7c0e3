"""Whisper's languages: accept codes and English names ("japanese" -> "ja")."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, str], dict[str, str]]:
    # transformers keeps Whisper's own table (codes, names and aliases such as "mandarin").
    from transformers.models.whisper.tokenization_whisper import LANGUAGES, TO_LANGUAGE_CODE

    return dict(LANGUAGES), dict(TO_LANGUAGE_CODE)


def normalize_language(value: str) -> str | None:
    """Return Whisper's code for a code or name; None for "auto"/empty (detect). Raise ValueError."""
    key = value.strip().lower()
    if key in ("", "auto", "detect"):
        return None
    codes, names = _tables()
    if key in codes:
        return key
    if key in names:
        return names[key]
    raise ValueError(
        f"unknown language {value!r}; use a Whisper language code or English name "
        f"(codes: {', '.join(sorted(codes))})"
    )


def language_names() -> dict[str, str]:
    """Whisper's code -> English name ("ja" -> "japanese"), in code order."""
    codes = _tables()[0]
    return {code: codes[code] for code in sorted(codes)}
