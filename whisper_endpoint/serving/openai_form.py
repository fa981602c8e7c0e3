"""OpenAI's multipart form, declared: the fields (so ``/docs`` and ``/openapi.json`` document them) and the
route class that reads the body under the server's limits before FastAPI parses it.

FastAPI reads a whole form before the route runs; ``FormUploadRoute`` reads the body first, counting
bytes as they arrive (413 at ``MAX_BODY_BYTES``, 408 when it stalls past ``BODY_TIMEOUT_S``, 415 when
it is not ``multipart/form-data``, 400 when it ends before its closing boundary), then hands FastAPI the
body it read. Fields the form does not declare are kept (``extra="allow"``) and passed to the handler
as parameters: the openai SDK's ``extra_body={"beam_size": 5}``.
"""

from __future__ import annotations

from typing import Literal, Optional, Union

from fastapi import UploadFile
from fastapi.routing import APIRoute
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response

from whisper_endpoint.adapters.errors import InvalidBodyError, UnsupportedMediaTypeError, with_param
from whisper_endpoint.adapters.payloads import media_type
from whisper_endpoint.formats import FORMATS
from whisper_endpoint.serving import auth
from whisper_endpoint.serving.limits import read_body

ResponseFormat = Literal[tuple(FORMATS)]  # OpenAI's formats, plus txt, tsv and rttm


class AudioForm(BaseModel):
    """``POST /v1/audio/transcriptions`` and ``/translations``: OpenAI's fields; any other field is a
    handler parameter (``beam_size``, ``vad_filter``, ``num_speakers``...)."""

    model_config = ConfigDict(extra="allow")

    file: Union[UploadFile, str, None] = Field(None, description="The audio (or video) file, any FFmpeg format.")
    model: Optional[str] = Field(None, description="The model (GET /v1/models); whisper-1 or none: the default.")
    language: Optional[str] = Field(None, description="ISO-639-1 code or English name; omitted: detected.")
    prompt: Optional[str] = Field(None, description="Text that primes vocabulary and style (initial_prompt).")
    response_format: ResponseFormat = Field("json", description="How the transcript comes back.")
    temperature: float = Field(0.0, ge=0.0, le=1.0, description="0: greedy, with the fallback schedule; > 0: sampled.")
    timestamp_granularities: list[Literal["word", "segment"]] = Field(
        default_factory=list, validation_alias=AliasChoices("timestamp_granularities[]", "timestamp_granularities"),
        description="verbose_json only: word and/or segment times.")
    stream: bool = Field(False, description="true: server-sent transcript events (json, text, diarized_json).")
    known_speaker_names: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("known_speaker_names[]", "known_speaker_names"),
        description="Up to 4 names of speakers to recognise (with diarization), one per reference.")
    known_speaker_references: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("known_speaker_references[]", "known_speaker_references"),
        description="One audio clip (2-10 s, a data URL) per known speaker name, in the same order.")

    def extra_fields(self) -> list[tuple[str, str]]:
        """The fields OpenAI does not define, as sent (text values only)."""
        return [(name, value) for name, value in (self.model_extra or {}).items() if isinstance(value, str)]


class FormUploadRoute(APIRoute):
    """A route whose multipart body is read under the server's limits before the form is parsed."""

    def get_route_handler(self):
        parse_and_run = super().get_route_handler()

        async def handler(request: Request) -> Response:
            # Body-free checks first, as on every other route: the API key (a 401 before a byte of the
            # upload is read; the route's own dependency runs again after, at no cost) and the models (503).
            await request.app.state.api_keys(request)
            service = request.app.state.service
            service.check_ready()
            # Made on arrival: the deadline (REQUEST_TIMEOUT_S) counts the upload too.
            request.state.decode_context = service.context(service.settings.request_timeout_s, "REQUEST_TIMEOUT_S",
                                                           tenant=auth.tenant(request).id)
            body = await _form_body(request, service.settings)
            return await parse_and_run(Request(request.scope, _replay(body, request.receive)))

        return handler


async def _form_body(request: Request, settings) -> bytes:
    kind = media_type(request.headers)
    if kind != "multipart/form-data":
        raise with_param(UnsupportedMediaTypeError(
            f"send a multipart/form-data form with the audio in 'file' (got Content-Type {kind!r})"), "file")
    body = await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
    boundary = _boundary(request.headers.get("content-type", ""))
    if boundary and f"--{boundary}--".encode() not in body[-256:]:  # a complete form ends with it
        raise InvalidBodyError("the multipart/form-data body ends before its closing boundary (truncated upload?)")
    return body


def _replay(body: bytes, receive):
    """An ASGI ``receive`` that gives the body read already, then the connection's own messages
    (a disconnect stays visible to the route)."""
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _boundary(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "boundary":
            return value.strip('"')
    return None
