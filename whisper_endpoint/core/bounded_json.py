"""JSON from a client, bounded before it is parsed: its length and its nesting depth are checked first,
and whatever the parser still finds wrong is a client error naming what was sent, never a 500.

``json.loads`` nests one call per bracket: a few thousand ``[`` raise ``RecursionError``, which is no
``ValueError`` and which callers catching ``ValueError`` let through as a 500. ``loads`` refuses text
longer than ``max_length`` characters or nested deeper than ``max_depth`` before parsing it (``check``),
and turns any error of the parser (``ValueError``, ``UnicodeDecodeError`` among them, ``RecursionError``,
``OverflowError``) into ``JSONValueError``: a 422 ``InvalidParameterError`` naming ``what``, and a
``ValueError`` too, so that a pydantic validator it passes through reports it under the field's name.

The limits (docs/hardening.md's limits table): a parameter sent as text that holds JSON (``languages``,
``channel_names``) up to ``PARAMETER_MAX_LENGTH`` characters and ``PARAMETER_MAX_DEPTH`` levels; a JSON
body up to ``BODY_MAX_DEPTH`` levels (its length is its route's body limit).

The depth is found without parsing, in a few passes of C code over the bytes (``nested_within``): the
escapes dropped, then all that is neither a quote nor a bracket, then the strings, and what is left, only
brackets, matched by a regular expression that accepts exactly the nestings up to the limit: no
recursion, and a cost linear in the body's length, most of it in its brackets (docs/hardening.md times
it).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from whisper_endpoint.core.errors import InvalidParameterError

PARAMETER_MAX_LENGTH = 8192  # characters: 20 language names, or 8 channel names of 64 characters \u-escaped
PARAMETER_MAX_DEPTH = 8  # a list of names is 1 level deep
BODY_MAX_DEPTH = 32  # {"parameters": {"known_speakers": [{"audio": [...]}]}} is 5 deep; a transcript's chunks 4
PARSER_ERRORS = (ValueError, RecursionError, OverflowError)  # UnicodeDecodeError and JSONDecodeError are ValueErrors

_SQUARE = bytes.maketrans(b"{}", b"[]")  # braces nest as brackets do
_NOT_MARKS = bytes(set(range(256)) - set(b'"[]{}'))
_QUOTED = re.compile(rb'"[^"]*+"')


class JSONValueError(InvalidParameterError, ValueError):
    """Text too long, too deep or not JSON: a 422 naming ``what``; ``problem`` says what is wrong without
    the name (for messages that name it already, as pydantic's do)."""

    def __init__(self, what: str, problem: str):
        super().__init__(f"{what}: {problem}")
        self.what, self.problem = what, problem


def loads(text: str | bytes, what: str, *, max_depth: int = PARAMETER_MAX_DEPTH,
          max_length: int | None = PARAMETER_MAX_LENGTH):
    """``text``'s JSON value once ``check`` lets it through; ``JSONValueError`` naming ``what`` for any
    problem."""
    check(text, what, max_depth=max_depth, max_length=max_length)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONValueError(what, f"not valid JSON ({exc.msg} at character {exc.pos})") from None
    except UnicodeDecodeError as exc:
        raise JSONValueError(what, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except PARSER_ERRORS as exc:  # an integer of over 4300 digits...
        raise JSONValueError(what, f"not valid JSON ({type(exc).__name__}: {str(exc)[:100]})") from None


def check(text: str | bytes, what: str, *, max_depth: int | None, max_length: int | None = None) -> None:
    """``JSONValueError`` naming ``what`` when ``text`` is longer than ``max_length`` characters or nests
    deeper than ``max_depth`` (None: either unchecked); nothing is parsed."""
    if max_length is not None and len(text) > max_length:
        raise JSONValueError(what, f"{len(text)} characters, more than the {max_length} accepted here")
    if max_depth is not None and not nested_within(text, max_depth):
        raise JSONValueError(what, f"nested more than {max_depth} levels deep (brackets and braces); at most "
                                   f"{max_depth} are accepted here")


def nested_within(text: str | bytes, max_depth: int) -> bool:
    """Whether ``text``'s brackets and braces, outside its strings, nest at most ``max_depth`` deep as far
    as a parser reads it: an unclosed bracket counts; an unmatched closing one, or a string left open, ends
    what it reads."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b"[" not in data and b"{" not in data:
        return True
    if b"\\" in data:  # escapes, in pairs from the left as a JSON string reads them: \\ first, then \"
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = data.translate(_SQUARE, _NOT_MARKS)  # only quotes (each one a string's start or end) and brackets
    if b'"' in marks:
        marks = marks.replace(b'""', b"")  # strings without brackets (or the outside between two strings)
        if b'"' in marks:
            marks = _QUOTED.sub(b"", marks)  # strings with brackets
        if b'"' in marks:  # an unterminated string: a parser reads no further
            marks = marks[:marks.index(b'"')]
    if len(marks) <= max_depth:
        return True
    found = _nesting(max_depth).match(marks)
    return found.end() == len(marks) or marks[found.end()] == ord("]")  # a "]" there matches nothing


@lru_cache(maxsize=8)
def _nesting(max_depth: int) -> re.Pattern:
    """Brackets nested at most ``max_depth`` deep, ending at any level: balanced groups up to each depth,
    then possibly one more "[" still open. Possessive throughout (no backtracking): one pass, in C."""
    balanced = [b""]
    for level in range(1, max_depth + 1):
        balanced.append(rb"(?:\[" + balanced[-1] + rb"\])*+")
    pattern = b""
    for level in range(1, max_depth + 1):
        pattern = balanced[level] + rb"(?:\[" + pattern + rb")?+"
    return re.compile(pattern)
