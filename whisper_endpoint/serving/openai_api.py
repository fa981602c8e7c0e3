"""OpenAI-compatible routes: ``POST /v1/audio/transcriptions``, ``/v1/audio/translations``,
``GET /v1/models``.

Form fields as in OpenAI's API: ``file`` (required), ``model`` (accepted, not used to choose: the
server has one model), ``language``, ``prompt``, ``response_format``, ``temperature`` (0-1; decoding
stays the backend's own, so a non-zero value is reported in ``X-Warnings``, not applied),
``timestamp_granularities[]`` (verbose_json only). Any other field is passed to the handler as a
parameter (``beam_size``, ``vad_filter``, ``num_speakers``...: the openai SDK's ``extra_body``).
Warnings the handler gives (ignored fields, anything it did differently) travel in the
``X-Warnings`` header as a JSON list, since OpenAI's bodies have no place for them.
"""

from __future__ import annotations

import json
from typing import Literal, Optional

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartParser
from starlette.responses import Response

from whisper_endpoint.adapters.errors import InvalidBodyError, NotFoundError, UnsupportedMediaTypeError, with_param
from whisper_endpoint.adapters.payloads import media_type, text_parameters
from whisper_endpoint.errors import InvalidInputError, InvalidParameterError, MissingInputError, UnsupportedOptionError
from whisper_endpoint.formats import render
from whisper_endpoint.request import echoed
from whisper_endpoint.serving.limits import limited_stream
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import InferenceService

ResponseFormat = Literal["json", "text", "srt", "verbose_json", "vtt", "diarized_json"]
# What each format needs from the handler.
_TIMESTAMPS = {"json": "none", "text": "none", "srt": "segment", "vtt": "segment", "diarized_json": "segment"}
_SPEAKER_FORMATS = ("srt", "vtt", "diarized_json")
# Request fields the route sets itself: a form field may not override them.
_ROUTE_FIELDS = ("task", "return_timestamps", "initial_prompt")


class AudioForm(BaseModel):
    """OpenAI's fields of ``/v1/audio/transcriptions`` and ``/translations`` (all but ``file``)."""

    model_config = ConfigDict(extra="forbid")

    model: Optional[str] = None
    language: Optional[str] = None
    prompt: Optional[str] = None
    response_format: ResponseFormat = "json"
    temperature: float = Field(0.0, ge=0.0, le=1.0)
    timestamp_granularities: list[Literal["word", "segment"]] = Field(default_factory=list)
    stream: bool = False


def router(service: InferenceService) -> APIRouter:
    api = APIRouter(prefix="/v1")

    @api.post("/audio/transcriptions", summary="OpenAI-compatible transcription (multipart form)")
    async def transcriptions(request: Request) -> Response:
        return await _audio(service, request, task="transcribe")

    @api.post("/audio/translations", summary="OpenAI-compatible translation into English (multipart form)")
    async def translations(request: Request) -> Response:
        return await _audio(service, request, task="translate")

    @api.get("/models", summary="The one model this server serves")
    async def models() -> JSONResult:
        service.check_ready()
        return JSONResult({"object": "list", "data": [_model_card(service)]})

    @api.get("/models/{model_id:path}", summary="One model")
    async def model(model_id: str) -> JSONResult:
        service.check_ready()
        if model_id != service.model_id:
            raise with_param(NotFoundError(f"the model {model_id!r} does not exist here; this server has "
                                           f"{service.model_id!r}"), "model")
        return JSONResult(_model_card(service))

    return api


def _model_card(service: InferenceService) -> dict:
    # ``created``: when this server loaded the model (Unix seconds).
    return {"id": service.model_id, "object": "model", "created": service.loaded_at, "owned_by": "whisper-endpoint"}


async def _audio(service: InferenceService, request: Request, *, task: str) -> Response:
    service.check_ready()
    form = await _read_form(service, request)
    try:
        audio = await _file(form)
        spec, extra = _fields(form)
    finally:
        await form.close()
    warnings: list[str] = []
    parameters = _parameters(service, spec, extra, task, warnings)
    result = await service.run({"inputs": audio, "parameters": parameters})
    rendered = render(
        result,
        spec.response_format,
        task=task,
        words=parameters["return_timestamps"] == "word",
        segments=parameters["return_timestamps"] == "segment",
    )
    headers = {}
    warnings += result.get("warnings", [])
    if warnings:
        headers["X-Warnings"] = json.dumps(warnings)  # ASCII: json.dumps escapes the rest
    if isinstance(rendered.body, str):
        return Response(rendered.body, media_type=rendered.media_type, headers=headers)
    return JSONResult(rendered.body, headers=headers)


async def _read_form(service: InferenceService, request: Request) -> FormData:
    if media_type(request.headers) != "multipart/form-data":
        raise with_param(UnsupportedMediaTypeError(
            f"send a multipart/form-data form with the audio in 'file' (got Content-Type "
            f"{media_type(request.headers)!r})"
        ), "file")
    settings = service.settings
    tail = bytearray()  # the body's last bytes: a complete form ends with its closing boundary

    async def stream():
        async for chunk in limited_stream(request, settings.max_body_bytes, settings.body_timeout_s):
            tail[:] = (bytes(tail) + chunk)[-256:]
            yield chunk

    form = await MultiPartParser(request.headers, stream()).parse()
    boundary = _boundary(request.headers.get("content-type", ""))
    if boundary and f"--{boundary}--".encode() not in tail:
        await form.close()
        raise InvalidBodyError("the multipart/form-data body ends before its closing boundary (truncated upload?)")
    return form


def _boundary(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "boundary":
            return value.strip('"')
    return None


async def _file(form: FormData) -> bytes:
    upload = form.get("file")
    if upload is None:
        raise with_param(MissingInputError("the form has no 'file' (the audio file to transcribe)"), "file")
    if not isinstance(upload, UploadFile):
        raise with_param(InvalidInputError("'file' must be a file upload, not a text field"), "file")
    return await upload.read()


def _fields(form: FormData) -> tuple[AudioForm, dict]:
    known, extra = {}, []
    for name, value in form.multi_items():
        if name == "file" or isinstance(value, UploadFile):
            continue
        key = name.removesuffix("[]")
        if key == "timestamp_granularities":
            known.setdefault(key, []).append(value)
        elif key in AudioForm.model_fields:
            known[key] = value
        else:
            extra.append((name, value))
    try:
        spec = AudioForm.model_validate(known)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = str(first["loc"][0]) if first["loc"] else None
        message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {echoed(e.get('input'))})"
                            for e in exc.errors())
        raise with_param(InvalidParameterError(f"invalid form field: {message}"), param) from None
    return spec, text_parameters(extra)


def _parameters(service: InferenceService, spec: AudioForm, extra: dict, task: str, warnings: list[str]) -> dict:
    if spec.stream:
        raise with_param(UnsupportedOptionError("streaming is not supported; send stream=false"), "stream")
    fmt = spec.response_format
    if task == "translate" and fmt == "diarized_json":
        raise with_param(InvalidParameterError("translations have no diarized_json format"), "response_format")
    if spec.timestamp_granularities and fmt != "verbose_json":
        raise with_param(InvalidParameterError(
            "timestamp_granularities[] needs response_format=verbose_json"), "timestamp_granularities")
    if fmt == "diarized_json" and not service.diarization_available:
        raise with_param(UnsupportedOptionError(
            "diarized_json needs speaker labels, and diarization is off on this server (DIARIZATION_MODEL is not set)"
        ), "response_format")
    overridden = sorted(set(extra) & set(_ROUTE_FIELDS))
    if overridden:
        raise with_param(InvalidParameterError(
            f"{', '.join(overridden)} cannot be set as a form field here: the route and response_format decide"
        ), overridden[0])
    if spec.temperature:
        warnings.append(f"temperature={spec.temperature:g} was not applied: decoding uses the backend's own settings")

    parameters = {**extra, "task": task, "return_timestamps": _timestamps(fmt, spec.timestamp_granularities, warnings)}
    if spec.language is not None:
        parameters["language"] = spec.language
    if spec.prompt:
        parameters["initial_prompt"] = spec.prompt
    if service.diarization_available and fmt not in _SPEAKER_FORMATS:
        parameters.setdefault("diarize", False)  # nothing in this format would show the speakers
    return parameters


def _timestamps(fmt: str, granularities: list[str], warnings: list[str]) -> str:
    if fmt != "verbose_json":
        return _TIMESTAMPS[fmt]
    if "word" not in granularities:
        return "segment"
    if "segment" in granularities:
        warnings.append("segments are left out when words are asked for: the handler returns one or the other")
    return "word"
