"""Where a sentence ends, for grouping words: shared by the word-timestamp segments of the
transformers backend and the speaker merge's smoothing."""

from __future__ import annotations

# Latin, CJK full-width, ellipsis, Arabic and Devanagari stops.
SENTENCE_END = (".", "?", "!", "。", "？", "！", "…", "؟", "।")
# A stop may sit inside closing quotes or brackets: `he said "no."` ends a sentence.
CLOSERS = "\"'”’»)]」』）"


def ends_sentence(text: str) -> bool:
    return text.rstrip().rstrip(CLOSERS).endswith(SENTENCE_END)
