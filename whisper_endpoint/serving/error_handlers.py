"""Every exception becomes one HTTP status and one JSON body, here and nowhere else.

The handler raises ``whisper_endpoint.errors`` (each carries ``status`` and ``code``), the server
``whisper_endpoint.adapters.errors``. Bodies:

- toolkit and SageMaker routes: ``{"error": message, "code": code, "status": status}`` (``to_dict``);
- ``/v1/...`` routes: OpenAI's ``{"error": {"message", "type", "param", "code"}}``, which the openai
  SDK turns into ``BadRequestError``, ``RateLimitError``...

Anything unexpected is a 500 whose body says only "internal error"; the traceback goes to the log.
"""

from __future__ import annotations

import logging

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from whisper_endpoint.adapters.errors import (
    IncompleteBodyError,
    InternalError,
    InvalidBodyError,
    MethodNotAllowedError,
    NotFoundError,
    OverloadedError,
)
from whisper_endpoint.errors import ClientError, EndpointError, InvalidParameterError

logger = logging.getLogger(__name__)


def as_endpoint_error(exc: BaseException) -> EndpointError:
    """Map any exception raised while serving a request to the error family."""
    if isinstance(exc, EndpointError):
        return exc
    if isinstance(exc, RequestValidationError):
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return InvalidParameterError(f"invalid request: {details}")
    if isinstance(exc, HTTPException):
        if exc.status_code == 404:
            return NotFoundError("no such route; see docs/serving.md for the routes this server has")
        if exc.status_code == 405:
            return MethodNotAllowedError(f"method not allowed here ({exc.detail})")
        error = ClientError(str(exc.detail)) if exc.status_code < 500 else InternalError()
        error.status = exc.status_code
        return error
    if isinstance(exc, ClientDisconnect):
        return IncompleteBodyError("the client disconnected before the whole body arrived")
    if isinstance(exc, MultiPartException):
        return InvalidBodyError(f"malformed multipart/form-data body: {exc.message}")
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        logger.error("out of memory: %s", type(exc).__name__)
        return OverloadedError("the server ran out of memory for this request; retry later")
    logger.error("unexpected error", exc_info=exc)
    return InternalError()


def error_body(error: EndpointError, *, openai: bool) -> dict:
    if not openai:
        return error.to_dict()
    if error.status == 429:
        kind = "rate_limit_error"
    elif error.status >= 500:
        kind = "server_error"
    else:
        kind = "invalid_request_error"
    return {
        "error": {
            "message": error.message,
            "type": kind,
            "param": getattr(error, "param", None),
            "code": error.code,
        }
    }


def error_headers(error: EndpointError) -> dict[str, str]:
    """The headers an error's response carries besides its body."""
    headers = {}
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if error.status == 401:  # RFC 9110: a 401 names its scheme
        headers["WWW-Authenticate"] = "Bearer"
    return headers


def error_response(request: Request, exc: BaseException) -> JSONResponse:
    error = as_endpoint_error(exc)
    if error.status < 500:
        logger.info("%s %s -> %s %s", request.method, request.url.path, error.status, error.code)
    body = error_body(error, openai=request.url.path.startswith("/v1/"))
    return JSONResponse(body, status_code=error.status, headers=error_headers(error))


def install(app) -> None:
    """Register the mapping for every exception type a request can raise."""

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error_response(request, exc)

    for kind in (EndpointError, RequestValidationError, HTTPException, ClientDisconnect, MultiPartException, Exception):
        app.add_exception_handler(kind, handle)
