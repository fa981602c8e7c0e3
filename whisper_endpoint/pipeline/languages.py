"""The languages of a response (issue 58): each chunk's and speaker entry's, and each language's share.

A segment carries the language it was decoded in (backends that know it); words take their segment's,
a speaker entry the language of the segments it overlaps most, and ``languages`` sums the segments'
durations per language, largest share first.
"""

from __future__ import annotations

from collections import defaultdict

from whisper_endpoint.core.types import Segment


def summary(segments: list[Segment]) -> list[dict] | None:
    """``[{"language", "share"}]``: each language's share of the transcribed speech; None when the
    segments do not say their language."""
    seconds = defaultdict(float)
    for segment in segments:
        if segment.language is not None:
            seconds[segment.language] += max(segment.end - segment.start, 0.0)
    if not seconds:
        return None
    total = sum(seconds.values()) or 1.0
    return [{"language": code, "share": round(value / total, 3)}
            for code, value in sorted(seconds.items(), key=lambda item: -item[1])]


def of_span(segments: list[Segment], start: float, end: float) -> str | None:
    """The language of the segments that overlap ``start``-``end`` most."""
    overlap = defaultdict(float)
    for segment in segments:
        if segment.language is not None:
            overlap[segment.language] += max(0.0, min(end, segment.end) - max(start, segment.start))
    best = max(overlap, key=overlap.get, default=None)
    return best if best is None or overlap[best] > 0 else _nearest(segments, start, end)


def with_languages(runs: list[dict], segments: list[Segment]) -> list[dict]:
    """Speaker entries (``timestamp``: [start, end]) with their ``language``, as new dicts."""
    if not any(segment.language for segment in segments):
        return runs
    return [{**run, "language": of_span(segments, *run["timestamp"])} for run in runs]


def _nearest(segments: list[Segment], start: float, end: float) -> str | None:
    middle = (start + end) / 2
    known = [s for s in segments if s.language is not None]
    return min(known, key=lambda s: abs((s.start + s.end) / 2 - middle)).language if known else None
