"""From an HTTP request to the handler and back, the same on every route and platform: the payload a
body carries, the status, body and headers an error is answered with, the warnings header, and JSON
that takes numpy values. The FastAPI server, SageMaker's container functions (``inference.py``) and
the Ray Serve replica all use these, so a status or an error body is decided here and nowhere else.

Error bodies:
- toolkit, SageMaker and Ray routes: ``{"error": message, "code": code, "status": status}``;
- ``/v1/...`` routes: OpenAI's ``{"error": {"message", "type", "param", "code"}}``, which the openai
  SDK turns into ``BadRequestError``, ``RateLimitError``...
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from whisper_endpoint.adapters.errors import (
    ClientClosedError,
    DeadlineExceededError,
    InternalError,
    OverloadedError,
    ShuttingDownError,
)
from whisper_endpoint.adapters.payloads import toolkit_payload
from whisper_endpoint.adapters.raw_audio import declared_type
from whisper_endpoint.core.decode_context import DEADLINE, DISCONNECTED, DecodeStopped
from whisper_endpoint.core.errors import EndpointError

logger = logging.getLogger(__name__)

JSON = "application/json"
WARNINGS_HEADER = "X-Warnings"


@dataclass(frozen=True)
class Reply:
    """An answer as any HTTP layer sends it."""

    status: int
    body: object  # a dict (JSON) or text
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = JSON


def payload(body: bytes, content_type: str | None, parameters: dict) -> dict:
    """The handler's ``{"inputs", "parameters"}`` from a request body; ``parameters`` from outside it
    (query string, SageMaker's custom attributes)."""
    return toolkit_payload(body, declared_type(content_type), parameters)


def as_endpoint_error(exc: BaseException) -> EndpointError:
    """Any exception raised while answering a request, as one of the error family."""
    if isinstance(exc, EndpointError):
        return exc
    if isinstance(exc, DecodeStopped):
        return stopped_error(exc)
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        logger.error("out of memory: %s", type(exc).__name__)
        return OverloadedError("the server ran out of memory for this request; retry later")
    logger.error("unexpected error", exc_info=exc)  # the traceback is for the operator, not the client
    return InternalError()


def stopped_error(stopped: DecodeStopped) -> EndpointError:
    """A decode stopped before its end, as the error its request is answered with."""
    progress = f"after {stopped.progress.windows_done} of {stopped.progress.windows_total} windows"
    if stopped.reason == DEADLINE:
        return DeadlineExceededError(
            f"the request passed its deadline of {stopped.timeout_s:g} s (setting {stopped.timeout_setting}); "
            f"decoding stopped {progress}: send shorter audio, or use POST /jobs for long files"
        )
    if stopped.reason == DISCONNECTED:
        return ClientClosedError(f"the client disconnected; decoding stopped {progress}")
    return ShuttingDownError(f"the server is shutting down; decoding stopped {progress}: retry")


def error_reply(exc: BaseException, *, openai: bool = False) -> Reply:
    error = as_endpoint_error(exc)
    return Reply(error.status, error_body(error, openai=openai), error_headers(error))


def error_body(error: EndpointError, *, openai: bool) -> dict:
    if not openai:
        return error.to_dict()
    if error.status == 429:
        kind = "rate_limit_error"
    elif error.status >= 500:
        kind = "server_error"
    else:
        kind = "invalid_request_error"
    return {"error": {"message": error.message, "type": kind, "param": getattr(error, "param", None),
                      "code": error.code}}


def error_headers(error: EndpointError) -> dict[str, str]:
    """The headers an error's response carries besides its body."""
    headers = {}
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if error.status == 401:  # RFC 9110: a 401 names its scheme
        headers["WWW-Authenticate"] = "Bearer"
    return headers


def warnings_header(warnings: list[str]) -> dict[str, str]:
    """Warnings for responses whose bodies have no place for them (OpenAI's): a JSON list, ASCII
    (``json.dumps`` escapes the rest), or nothing when there are none."""
    return {WARNINGS_HEADER: json.dumps(warnings)} if warnings else {}


def dumps(value, **options) -> str:
    """JSON text of a response; numpy scalars and arrays (timestamps, probabilities) become numbers."""
    return json.dumps(value, ensure_ascii=False, default=_plain, **options)


def _plain(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
