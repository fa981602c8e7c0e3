"""The errors only HTTP can cause (queue full, body too slow, wrong content type...), in the same
family as the handler's (``whisper_endpoint.core.errors``): each has ``status`` and ``code``.

No web framework is imported here, so ``inference.py`` (SageMaker's container) can use them too;
``error_handlers.py`` maps every exception to a response.
"""

from __future__ import annotations

from whisper_endpoint.core.errors import ClientError, EndpointError


class UnsupportedMediaTypeError(ClientError):
    status = 415
    code = "unsupported_media_type"


class InvalidBodyError(ClientError):
    """The body cannot be parsed: not JSON, a broken multipart form."""

    code = "invalid_body"


class IncompleteBodyError(ClientError):
    """The client went away before sending the whole body (its Content-Length)."""

    code = "incomplete_body"


class BodyTimeoutError(ClientError):
    status = 408
    code = "body_timeout"


class NotFoundError(ClientError):
    status = 404
    code = "not_found"


class MethodNotAllowedError(ClientError):
    status = 405
    code = "method_not_allowed"


class QueueFullError(EndpointError):
    """Every slot is busy and the queue is full: retry after ``retry_after`` seconds."""

    status = 429
    code = "queue_full"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class NotReadyError(EndpointError):
    """The model is still loading (or failed to load): health checks and requests get 503."""

    status = 503
    code = "not_ready"

    def __init__(self, message: str, *, code: str | None = None, retry_after: int | None = None):
        super().__init__(message, code=code)
        self.retry_after = retry_after


class OverloadedError(EndpointError):
    """Out of (GPU) memory: not the client's fault, and a retry may well succeed."""

    status = 503
    code = "out_of_memory"
    retry_after = 5


class DeadlineExceededError(EndpointError):
    """The request passed its deadline (REQUEST_TIMEOUT_S...): its decode stopped at the next window."""

    status = 504
    code = "deadline_exceeded"


class ClientClosedError(EndpointError):
    """The client disconnected while its request waited or decoded; the answer goes nowhere (nginx's 499)."""

    status = 499
    code = "client_closed_request"


class ShuttingDownError(EndpointError):
    """The server is stopping (SIGTERM): the decode stopped at its next window; retry on another replica."""

    status = 503
    code = "shutting_down"
    retry_after = 5


class InternalError(EndpointError):
    status = 500
    code = "internal_error"

    def __init__(self):
        super().__init__("internal error")


def with_param(error: EndpointError, param: str) -> EndpointError:
    """Name the request field an error is about (OpenAI's ``param``)."""
    error.param = param
    return error
