"""From an HTTP request to the handler's ``{"inputs": ..., "parameters": {...}}``.

JSON bodies are the toolkit's payload as they are (``inputs`` base64, ``parameters``), their nesting
bounded first (``core/bounded_json.py``), then decoded in steps (``stepped_json``: a long array of samples
becomes float32 a slice at a time, with the collector paused). Binary bodies are
the audio file itself: ``audio/*`` and ``video/*`` (webm, mp4), and the generic types clients send
when they do not know better (none at all from ``InferenceClient``, ``application/octet-stream``,
curl's ``application/x-www-form-urlencoded``). Their parameters come from the query string (and on
SageMaker from ``X-Amzn-SageMaker-Custom-Attributes``). Headerless G.711 declared by its type
(``audio/basic``, ``audio/pcmu``, ``audio/pcma``) is wrapped as a WAV file (``raw_audio``). Anything else is 415.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Optional

from whisper_endpoint.adapters import gc_quiet, raw_audio, stepped_json
from whisper_endpoint.adapters.errors import InvalidBodyError, UnsupportedMediaTypeError
from whisper_endpoint.core import bounded_json
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.errors import PayloadTooLargeError

GENERIC_BINARY = frozenset(
    {"", "application/octet-stream", "binary/octet-stream", "application/x-www-form-urlencoded"}
)
MAX_JSON_ITEMS = 1_000_000  # array elements decoded one by one (a long run of samples counts as none)
_TEXT_FIELDS = {name for name, spec in InferenceConfig.model_fields.items() if spec.annotation in (str, Optional[str])}


def media_type(headers) -> str:
    """The bare media type of a request's headers (no parameters), lower case; '' when absent."""
    return bare_media_type(headers.get("content-type"))


def bare_media_type(content_type: str | None) -> str:
    """``audio/flac; rate=16000`` -> ``audio/flac``; '' when absent."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_json(kind: str) -> bool:
    return kind in ("application/json", "text/json") or kind.endswith("+json")


def is_audio(kind: str) -> bool:
    return kind.startswith(("audio/", "video/")) or kind in GENERIC_BINARY


def toolkit_payload(body: bytes, kind: str, parameters: dict) -> dict:
    """The handler's payload for a JSON or binary body; ``parameters`` from outside the body. ``kind``: the
    bare media type, a G.711 one with its rate (``raw_audio.declared_type``)."""
    if is_json(kind):
        try:
            bounded_json.check(body, "the JSON body", max_depth=bounded_json.BODY_MAX_DEPTH)
        except bounded_json.JSONValueError as exc:
            raise InvalidBodyError(f"the JSON body is {exc.problem}") from None
        try:
            with gc_quiet.paused():
                data = stepped_json.loads(body.decode("utf-8"), MAX_JSON_ITEMS)
        except stepped_json.TooManyItems:
            raise PayloadTooLargeError(
                f"the JSON body has more than {MAX_JSON_ITEMS} array elements; send audio as a file or base64",
                code="body_too_large") from None
        except bounded_json.PARSER_ERRORS:  # UnicodeDecodeError, ValueError; OverflowError: a huge integer
            raise InvalidBodyError(
                "the body is not valid JSON; send {\"inputs\": \"<base64 audio>\", \"parameters\": {...}} "
                "or the audio file itself with an audio/* content type"
            ) from None
        if isinstance(data, dict) and parameters:
            data = {**data, "parameters": _merged(parameters, data.get("parameters"))}
        return data
    if is_audio(kind):
        return {"inputs": raw_audio.as_file(body, kind), "parameters": parameters}
    raise UnsupportedMediaTypeError(
        f"unsupported Content-Type {kind!r}: send application/json ({{\"inputs\": base64, \"parameters\"}}) "
        "or the audio file with an audio/* or application/octet-stream content type"
    )


def text_parameters(pairs: Iterable[tuple[str, str]]) -> dict:
    """Parameters that arrive as text (query string, form fields, custom attributes).

    Numbers are left to pydantic's parsing; "true"/"false" become booleans and "null"/"none" None,
    except for free-text fields (language, initial_prompt), which stay as sent.
    """
    parameters = {}
    for name, value in pairs:
        parameters[name] = value if name in _TEXT_FIELDS else _scalar(value)
    return parameters


def sagemaker_attributes(header: str | None) -> list[tuple[str, str]]:
    """``X-Amzn-SageMaker-Custom-Attributes: language=ja;return_timestamps=word`` as pairs."""
    pairs = []
    for item in (header or "").split(";"):
        name, sep, value = item.partition("=")
        if sep and name.strip():
            pairs.append((name.strip(), value.strip()))
    return pairs


def _merged(outside: dict, inside):
    """Parameters in the body win over those from the query string."""
    if inside is None:
        return outside
    if isinstance(inside, Mapping):
        return {**outside, **inside}
    return inside  # not an object: the handler says what is wrong with it


def _scalar(value: str):
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none"):
        return None
    return value
