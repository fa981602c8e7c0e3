"""``json.loads`` in steps, for big bodies parsed on a thread beside the event loop.

One ``json.loads`` (or pydantic's ``model_validate_json``) of a big body holds the GIL for the whole
parse, and the event loop (``/health``) waits that long, thread or not (docs/hardening.md measures it).
Here arrays are decoded one element at a time (objects outside arrays key by key), so no single call
holds the GIL for long. Elements are counted, and decoding stops as soon as they pass ``max_items``
(``TooManyItems``), before their objects are built. A long run of numbers (audio samples: the
``{"inputs": {"array": [...]}}`` payload) becomes a float32 array, decoded a slice at a time: 4 bytes
a sample instead of a Python float and its list slot (32), and not counted as items.
"""

from __future__ import annotations

import json
import re

import numpy as np

_decoder = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBERS = re.compile(r"[-+0-9.eE, \t\n\r]*")
NUMERIC_RUN_CHARS = 4096  # shorter number arrays stay lists (parameters such as a temperature list)
_SLICE_CHARS = 256 * 1024  # of a numeric run per json call (~10 ms)


class TooManyItems(ValueError):
    pass


def loads(text: str, max_items: int):
    """``text``'s JSON value (``ValueError`` when it is not JSON, ``TooManyItems`` past ``max_items``)."""
    counted = [0]
    value, end = _value(text, _skip(text, 0), counted, max_items)
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def _skip(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()


def _after_item(text: str, at: int, close: str) -> tuple[int, bool]:
    """Past the ',' after an item (False), or past the closing bracket (True)."""
    at = _skip(text, at)
    if text.startswith(",", at):
        return _skip(text, at + 1), False
    if text.startswith(close, at):
        return at + 1, True
    raise ValueError(f"expected ',' or '{close}' at character {at}")


def _value(text: str, at: int, counted: list[int], max_items: int):
    if text.startswith("[", at):
        return _array(text, at, counted, max_items)
    if text.startswith("{", at):
        return _object(text, at, counted, max_items)
    return _decoder.raw_decode(text, at)


def _array(text: str, at: int, counted: list[int], max_items: int):
    start = _skip(text, at + 1)
    numbers = _numeric_run(text, start)
    if numbers is not None:
        return numbers
    items, at = [], start
    if text.startswith("]", at):
        return items, at + 1
    while True:
        counted[0] += 1
        if counted[0] > max_items:
            raise TooManyItems(f"more than {max_items} items")
        if text.startswith("[", at):  # nested arrays (channels of samples) in steps too
            item, at = _array(text, at, counted, max_items)
        else:
            item, at = _decoder.raw_decode(text, at)
        items.append(item)
        at, closed = _after_item(text, at, "]")
        if closed:
            return items, at


def _numeric_run(text: str, at: int) -> tuple[np.ndarray, int] | None:
    """A long array of plain numbers from ``at`` (after its '['), as float32; None when it is not one."""
    first = _NUMBERS.match(text, at, at + NUMERIC_RUN_CHARS + 1).end()
    if first <= at + NUMERIC_RUN_CHARS:
        return None
    pieces = []
    while True:
        window = min(at + _SLICE_CHARS, len(text))
        end = _NUMBERS.match(text, at, window).end()
        cut = end if end < window else text.rfind(",", at, end)
        if cut <= at:  # no comma in a whole slice: not an array of numbers
            return None
        piece = text[at:cut].strip().rstrip(",") if end < window else text[at:cut]
        if piece.strip():
            pieces.append(np.asarray(json.loads(f"[{piece}]"), dtype=np.float32))
        if end < window:
            break
        at = cut + 1
    close = _skip(text, end)
    if not text.startswith("]", close) or text[at:end].strip().endswith(","):
        return None  # something else follows (NaN, a string, a trailing comma): decoded element by element
    return np.concatenate(pieces) if pieces else np.zeros(0, np.float32), close + 1


def _object(text: str, at: int, counted: list[int], max_items: int) -> tuple[dict, int]:
    value, at = {}, _skip(text, at + 1)
    if text.startswith("}", at):
        return value, at + 1
    while True:
        if not text.startswith('"', at):
            raise ValueError(f"expected a property name at character {at}")
        key, at = _decoder.raw_decode(text, at)
        at = _skip(text, at)
        if not text.startswith(":", at):
            raise ValueError(f"expected ':' at character {at}")
        value[key], at = _value(text, _skip(text, at + 1), counted, max_items)
        at, closed = _after_item(text, at, "}")
        if closed:
            return value, at
