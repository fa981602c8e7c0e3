"""The transformers pipeline's output as our segments: its chunks, or its words grouped into sentences."""

from __future__ import annotations

from whisper_endpoint.core.sentences import ends_sentence
from whisper_endpoint.core.types import Segment, Word


def segments(output: dict, timestamps: str, duration: float) -> list[Segment]:
    if timestamps == "none" or not output.get("chunks"):
        return [Segment(0.0, duration, output["text"])]
    if timestamps == "word":
        words = [Word(*_times(chunk, duration), chunk["text"]) for chunk in output["chunks"]]
        return _sentences(words)
    return [Segment(*_times(chunk, duration), chunk["text"]) for chunk in output["chunks"]]


def _sentences(words: list[Word]) -> list[Segment]:
    """The pipeline returns words only; group them into sentence segments."""
    segments, current = [], []
    for word in words:
        current.append(word)
        if ends_sentence(word.text) or word is words[-1]:
            segments.append(Segment(current[0].start, current[-1].end, "".join(w.text for w in current),
                                    tuple(current)))
            current = []
    return segments


def _times(chunk: dict, duration: float) -> tuple[float, float]:
    start, end = chunk["timestamp"]
    start = 0.0 if start is None else float(start)
    return start, duration if end is None else float(end)  # the last chunk may be open-ended
