"""What one request's decoding keeps while an engine's library calls back into our code.

faster-whisper and transformers call our overrides and hooks (an encoder call, a word alignment) with
their own arguments only; the request they work for is found here. One context variable for the whole
package, set for the length of a request's decode in this thread or task only: concurrent requests each
see their own state.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class RequestState:
    counter: Any = None  # the request's encoder windows and their bound (cost.WindowCounter)
    encoder_outputs: dict | None = None  # outputs kept from language detection (asr/encoder_outputs.py)
    vad_probabilities: dict | None = None  # the VAD's, per audio it heard (speech.py: ``heard_once``)


_current = contextvars.ContextVar("asr_request_state", default=None)


def current() -> RequestState | None:
    return _current.get()


@contextmanager
def opened(**fields) -> Iterator[RequestState]:
    """A state for the block, with ``fields`` set and the others taken from the state around it (if any)."""
    around = _current.get()
    state = RequestState(**{**(vars(around) if around is not None else {}), **fields})
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)
