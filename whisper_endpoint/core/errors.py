"""One exception family for everything a client can cause.

The handler raises these; the managed Inference Endpoints toolkit turns any exception into
HTTP 400 with ``str(exc)`` as the message, so every message names the problem and the valid
values. Our own server maps ``status`` to the HTTP status once, in one place.
"""

from __future__ import annotations


class EndpointError(Exception):
    """Base of the family: carries an HTTP status and a stable machine-readable code."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, *, code: str | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_dict(self) -> dict:
        return {"error": self.message, "code": self.code, "status": self.status}


class ClientError(EndpointError):
    """The request is wrong; retrying it unchanged will fail again."""

    status = 400
    code = "bad_request"


class MissingInputError(ClientError):
    code = "missing_inputs"


class InvalidInputError(ClientError):
    """``inputs`` has the wrong type or shape (not base64, not bytes, malformed array)."""

    code = "invalid_inputs"


class InvalidParameterError(ClientError):
    """A parameter has the wrong type or is out of range. 422 like FastAPI's validation errors."""

    status = 422
    code = "invalid_parameter"


class UnsupportedOptionError(ClientError):
    """A valid option that the loaded models cannot honour (translate on an English-only model...)."""

    code = "unsupported_option"


class UndecodableAudioError(ClientError):
    """The bytes are not audio we can decode (415 Unsupported Media Type)."""

    status = 415
    code = "undecodable_audio"


class EmptyAudioError(ClientError):
    code = "empty_audio"


class PayloadTooLargeError(ClientError):
    status = 413
    code = "payload_too_large"


class ModelLoadError(EndpointError):
    """A model named in the settings cannot be found or loaded: a deployment problem, not a client one."""

    status = 500
    code = "model_load_failed"
