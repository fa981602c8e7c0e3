"""FastAPI's and Starlette's own exceptions (validation, 404/405, a client gone mid-body, a broken
multipart form) and decodes stopped early (deadline: 504) as the error family; the status, body and headers they are answered with come from
``whisper_endpoint.adapters.http``, as on every other route and platform.

Anything unexpected is a 500 whose body says only "internal error"; the traceback goes to the log.
"""

from __future__ import annotations

import logging

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from whisper_endpoint.adapters import http
from whisper_endpoint.adapters.errors import (
    IncompleteBodyError,
    InternalError,
    InvalidBodyError,
    MethodNotAllowedError,
    NotFoundError,
    with_param,
)
from whisper_endpoint.core.decode_context import DecodeStopped
from whisper_endpoint.core.errors import ClientError, EndpointError, InvalidParameterError
from whisper_endpoint.pipeline.request import MAX_ERRORS_DESCRIBED, echoed

logger = logging.getLogger(__name__)


def serving_error(exc: BaseException) -> EndpointError:
    """Map any exception raised while serving a request to the error family: FastAPI's and Starlette's
    own here, the rest as ``http.as_endpoint_error``."""
    if isinstance(exc, RequestValidationError):
        return _invalid_fields(exc)
    if isinstance(exc, HTTPException):
        return _http_exception(exc)
    if isinstance(exc, ClientDisconnect):
        return IncompleteBodyError("the client disconnected before the whole body arrived")
    if isinstance(exc, MultiPartException):
        return InvalidBodyError(f"malformed multipart/form-data body: {exc.message}")
    return http.as_endpoint_error(exc)


def _invalid_fields(exc: RequestValidationError) -> EndpointError:
    """A declared field (an OpenAI form field) that failed validation: 422 naming the field."""
    errors = exc.errors()
    shown = errors[:MAX_ERRORS_DESCRIBED]  # a body can hold thousands of wrong values
    fields = [[str(part) for part in e["loc"] if part not in ("body", "query", "header")] for e in shown]
    details = "; ".join(f"{'.'.join(where)[:200] or 'body'}: {e['msg']} (got {echoed(e.get('input'))})"
                        for where, e in zip(fields, shown, strict=True))
    if len(errors) > len(shown):
        details += f"; and {len(errors) - len(shown)} more"
    what = "form field" if errors and errors[0]["loc"][:1] == ("body",) else "request field"
    error = InvalidParameterError(f"invalid {what}: {details}")
    return with_param(error, fields[0][0].removesuffix("[]")) if fields and fields[0] else error


def _http_exception(exc: HTTPException) -> EndpointError:
    if isinstance(exc.__cause__, (MultiPartException, ClientDisconnect)):  # FastAPI's "error parsing the body"
        return serving_error(exc.__cause__)
    if exc.status_code == 404:
        return NotFoundError("no such route; see docs/serving.md for the routes this server has")
    if exc.status_code == 405:
        return MethodNotAllowedError(f"method not allowed here ({exc.detail})")
    error = ClientError(str(exc.detail)) if exc.status_code < 500 else InternalError()
    error.status = exc.status_code
    return error


def error_response(request: Request, exc: BaseException) -> JSONResponse:
    error = serving_error(exc)
    if error.status < 500:
        logger.info("%s %s -> %s %s", request.method, request.url.path, error.status, error.code)
    reply = http.error_reply(error, openai=request.url.path.startswith("/v1/"))
    return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)


def install(app) -> None:
    """Register the mapping for every exception type a request can raise."""

    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error_response(request, exc)

    kinds = (EndpointError, DecodeStopped, RequestValidationError, HTTPException, ClientDisconnect, MultiPartException,
             Exception)
    for kind in kinds:
        app.add_exception_handler(kind, handle)
