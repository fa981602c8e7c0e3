"""A request's cost, counted in Whisper encoder windows, and the bound on it.

Whisper's encoder always runs on 30 s of features: a window holding 1 s of speech costs as much as
one holding 30 s. So the cost of a request is the number of encoder windows it runs (language
detection, every batched window, every seek of the sequential decoder, every remainder decoded
again), and parameters must not multiply it:

- windows are at least ``MIN_WINDOW_S`` long: a smaller ``chunk_length_s`` is raised to it (with
  ``chunk_length_s: 1`` every second of speech would be a window of its own);
- ``batch_size`` is capped by the deployment's ``MAX_BATCH_SIZE`` (memory grows with every window
  encoded at once: ctranslate2/encoding.py);
- a request runs at most ``window_budget(duration)`` windows: ``WINDOWS_PER_30S`` per started 30 s
  of audio, plus ``EXTRA_WINDOWS``. Windows packed from speech of at most ``MIN_WINDOW_S`` or longer
  fit in it by construction (at most 2 per ``MIN_WINDOW_S`` of speech, plus 1, plus language
  detection); the sequential decoder's seeks and the second pass over window remainders are stopped
  when it is spent, and the response says what was left out;
- speech in several languages has a window per turn's language (language_parts.py): the windows cut
  that way may raise the request's count to ``TURN_WINDOWS_PER_30S`` per started 30 s of audio, and
  each voice's language is detected on a window of its own speech, at most ``VOICE_WINDOWS_PER_30S``
  per started 30 s of speech (voice_languages.py); both are added to the bound.

Backends count their encoder calls here (``count``) and report the total in ``decoding``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from whisper_endpoint.asr import request_state

MIN_WINDOW_S = 15  # distil-whisper's chunked recipe uses 15 s; shorter windows only multiply the work
WINDOWS_PER_30S = 4
EXTRA_WINDOWS = 2  # language detection, and the last window's seek
TURN_WINDOWS_PER_30S = 8  # a conversation's turns, each in its language's window (a turn every 4 s)
VOICE_WINDOWS_PER_30S = 3  # speech in several languages: each voice's language detected on its own speech


class BudgetSpent(Exception):
    """Raised by ``count`` before an encoder call that would pass the budget."""


@dataclass
class WindowCounter:
    budget: int
    used: int = 0
    notes: list[str] = field(default_factory=list)
    words_spread: int = 0  # words the alignment found no times for (alignment.py)
    request_id: str = ""  # for the log lines about this request's windows (window_fallback.py)

    @property
    def spent(self) -> bool:
        return self.used >= self.budget



def window_budget(duration_s: float) -> int:
    return WINDOWS_PER_30S * max(1, math.ceil(duration_s / 30)) + EXTRA_WINDOWS


def turn_windows(duration_s: float) -> int:
    """The most windows speech in several languages may be cut into (``TURN_WINDOWS_PER_30S``)."""
    return TURN_WINDOWS_PER_30S * max(1, math.ceil(duration_s / 30))


def voice_windows(speech_s: float) -> int:
    """The most voices whose speech is detected in a window of its own (``VOICE_WINDOWS_PER_30S``)."""
    return VOICE_WINDOWS_PER_30S * max(1, math.ceil(speech_s / 30))


@contextmanager
def counting(duration_s: float, *, request_id: str = "") -> Iterator[WindowCounter]:
    """``with counting(duration) as counter:`` counts the encoder windows run inside the block
    (this thread or task only: concurrent requests each have their own counter)."""
    counter = WindowCounter(window_budget(duration_s), request_id=request_id)
    with request_state.opened(counter=counter):
        yield counter


def count(windows: int) -> None:
    """Called by the backends before each encoder call on ``windows`` windows."""
    counter = _counter()
    if counter is None:
        return
    if counter.used + windows > counter.budget:
        raise BudgetSpent(f"{counter.budget} encoder windows")
    counter.used += windows


def count_words_spread(words: int) -> None:
    """Called by the word alignment for the words it timed from their segment's span."""
    counter = _counter()
    if counter is not None:
        counter.words_spread += words


def allow(windows: int) -> None:
    """Raise the current request's bound by ``windows``: work the request's own plan adds (its windows
    cut where the language changes, its voices' detection) without taking it from the decoding's share."""
    counter = _counter()
    if counter is not None:
        counter.budget += windows


def _counter() -> WindowCounter | None:
    state = request_state.current()
    return None if state is None else state.counter


def spread_note(counter: WindowCounter) -> list[str]:
    """The response's warning for the words timed from their segment's span, if any."""
    if not counter.words_spread:
        return []
    return [f"{counter.words_spread} word(s) were timed from their segment's span: the word alignment found no "
            "path for them, or their window was decoded again without word times"]


def window_length(options, duration_s: float, warnings: list[str]) -> int:
    """The window length this request decodes with: ``chunk_length_s``, at least ``MIN_WINDOW_S``."""
    asked = options.chunk_length_s
    if asked >= MIN_WINDOW_S:
        return asked
    if duration_s > asked:
        warnings.append(
            f"chunk_length_s {asked} was raised to {MIN_WINDOW_S}: every window costs a full 30 s encoder "
            f"pass, so windows under {MIN_WINDOW_S} s would multiply the work"
        )
    return MIN_WINDOW_S


def batch_size(options, max_batch_size: int, warnings: list[str]) -> int:
    """``batch_size``, capped by the deployment's MAX_BATCH_SIZE (said so when the client asked for more)."""
    if options.batch_size <= max_batch_size:
        return options.batch_size
    if "batch_size" in options.model_fields_set:
        warnings.append(
            f"batch_size {options.batch_size} was lowered to {max_batch_size}, this endpoint's most "
            "windows decoded at once (setting MAX_BATCH_SIZE)"
        )
    return max_batch_size


def stopped_note(duration_s: float, reached_s: float) -> str:
    return (
        f"decoding stopped at this request's bound of {window_budget(duration_s)} encoder windows for "
        f"{duration_s:.1f} s of audio ({WINDOWS_PER_30S} per started 30 s, plus {EXTRA_WINDOWS}): the audio after "
        f"{reached_s:.1f} s was not transcribed"
    )
