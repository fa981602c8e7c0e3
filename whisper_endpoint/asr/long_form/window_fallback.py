"""One window's decode that cannot lose the request (issue 69).

A long request decodes hundreds of windows; an error in one of them (a word alignment that finds no
path, a kernel that rejects a shape) must not throw away the others. So each window or piece is decoded
through ``decoded``: on an error it is logged with the request's id and decoded again the plain way,
first without word times, then greedy; a window that fails all of them is given up with a warning, and
the request goes on. Stops are not errors: the budget (``cost.BudgetSpent``) and the request's own stop
(``DecodeStopped``) pass through.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from whisper_endpoint.asr import cost
from whisper_endpoint.core.decode_context import DecodeStopped

logger = logging.getLogger(__name__)
PASSED_ON = (cost.BudgetSpent, DecodeStopped)


def attempts(kwargs: dict) -> list[tuple[str, dict]]:
    """faster-whisper's options for each try, as asked first: (what the try is, its options)."""
    plain = {**kwargs, "word_timestamps": False}
    greedy = {**plain, "beam_size": 1, "best_of": 1, "patience": 1, "temperature": 0.0}
    tries = [("as asked", kwargs), ("without word times", plain), ("greedy without word times", greedy)]
    return [(what, options) for index, (what, options) in enumerate(tries)
            if all(options != earlier for _, earlier in tries[:index])]


def decoded(decode: Callable[[dict], list], kwargs: dict, what: str, counter: cost.WindowCounter) -> list:
    """``decode(kwargs)``; on an error, ``decode`` with each plainer option set in turn; [] when all fail.
    ``what`` names the window in the log and the warnings (``counter.notes``)."""
    return first_that_works(decode, attempts(kwargs), what, counter, given_up=[])


def first_that_works(decode: Callable, tries: list[tuple[str, object]], what: str, counter: cost.WindowCounter,
                     given_up):
    """``decode(options)`` for each try's options in turn until one returns; ``given_up`` when all fail."""
    for index, (how, options) in enumerate(tries):
        try:
            found = decode(options)
        except PASSED_ON:
            raise
        except Exception:
            logger.exception("request %s: decoding %s %s failed", counter.request_id, what, how)
            continue
        if index:
            counter.notes.append(f"{what} was decoded again {how} after an error (request {counter.request_id})")
        return found
    counter.notes.append(f"{what} was not transcribed: its decoding failed, also without word times and greedy "
                         f"(request {counter.request_id})")
    return given_up
