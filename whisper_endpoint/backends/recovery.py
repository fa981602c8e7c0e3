"""A failed window decoded again (issue 57): alone, with the temperature fallback and no previous text;
if that fails too, cut at the speech's own pauses and each piece decoded alone. The best decode by
failed_windows' measures is kept, and the caller is told whether the window was recovered.

The backend supplies ``decode(window) -> segments`` (its sequential decoder, settings of its own) and the
pauses; this module only chooses which decodes to try and which to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from whisper_endpoint.backends import failed_windows
from whisper_endpoint.backends.windows import Window

PIECE_S = 10.0  # pieces of a window cut at its pauses: short enough that a loop has no room to start


@dataclass(frozen=True)
class Recovered:
    segments: list
    recovered: bool  # False: every decode failed; the least bad is kept and a warning is due
    reason: str | None  # why the first decode failed


def judged(segments: Sequence, speech_s: float | None) -> failed_windows.Decoded:
    """A window's segments as one decode: their text, and the log-probability and no-speech probability
    averaged over them by text length."""
    text = "".join(s.text for s in segments)
    weights = [max(1, len(s.text)) for s in segments]
    total = sum(weights) or 1

    def mean(name: str) -> float | None:
        values = [getattr(s, name, None) for s in segments]
        if not values or any(v is None for v in values):
            return None
        return sum(w * v for w, v in zip(weights, values)) / total

    return failed_windows.Decoded(text, mean("avg_logprob"), mean("no_speech_prob"), speech_s)


def pieces(window: Window, pauses: Sequence[float], longest: float = PIECE_S) -> list[Window]:
    """The window cut at pauses (times between speech spans) into pieces of at most ``longest`` seconds
    where the pauses allow (a span longer than that stays whole)."""
    cuts = [t for t in sorted(pauses) if window.start < t < window.end]
    found, start, last = [], window.start, window.start
    for cut in [*cuts, window.end]:
        if cut - start > longest and last > start:
            found.append(Window(start, last))
            start = last
        last = cut
    found.append(Window(start, window.end))
    return found


def recover(window: Window, first: Sequence, decode: Callable[[Window], list], pauses: Sequence[float],
            reason: str, speech_s: float | None = None) -> Recovered:
    """Decode ``window`` again, whose first decode (``first``) failed for ``reason``; ``speech_s``: the
    seconds of speech in it (default: all of it, as in a window of packed speech)."""
    speech_s = window.end - window.start if speech_s is None else speech_s
    candidates = [list(first)]
    alone = decode(window)
    if failed_windows.failure(judged(alone, speech_s)) is None:
        return Recovered(alone, True, reason)
    candidates.append(alone)
    cut = pieces(window, pauses)
    if len(cut) > 1:
        joined = [segment for piece in cut for segment in decode(piece)]
        candidates.append(joined)
    best = min(candidates, key=lambda c: failed_windows.rank(judged(c, speech_s)))
    return Recovered(best, failed_windows.failure(judged(best, speech_s)) is None, reason)
