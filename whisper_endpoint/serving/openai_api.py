"""OpenAI-compatible routes: ``POST /v1/audio/transcriptions``, ``/v1/audio/translations``,
``GET /v1/models``.

The form's fields are declared in ``openai_form.AudioForm`` (OpenAI's: ``file``, ``model``, ``language``,
``prompt``, ``response_format``, ``temperature``, ``timestamp_granularities[]``, ``stream``); any other
field is a handler parameter. ``model`` is accepted, not used to choose (the server has one model);
``temperature`` is the handler's (0: greedy with the fallback schedule, > 0: sampled). Warnings travel in the ``X-Warnings`` header as a JSON list, since OpenAI's bodies have
no place for them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.datastructures import UploadFile
from starlette.responses import Response

from whisper_endpoint import formats
from whisper_endpoint.adapters import raw_audio
from whisper_endpoint.adapters.errors import NotFoundError, with_param
from whisper_endpoint.adapters.http import warnings_header
from whisper_endpoint.adapters.payloads import text_parameters
from whisper_endpoint.core.errors import (
    ClientError,
    InvalidInputError,
    InvalidParameterError,
    MissingInputError,
    UnsupportedOptionError,
)
from whisper_endpoint.serving import openai_stream
from whisper_endpoint.serving.openai_form import AudioForm, FormUploadRoute
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import InferenceService
from whisper_endpoint.speakers.enrolment import decode_clip

# Request fields the route sets itself: a form field may not override them.
_ROUTE_FIELDS = ("task", "return_timestamps", "initial_prompt", "known_speakers")
# OpenAI's limits on known speakers (the handler's own known_speakers allows 8 names of 2-30 s clips).
OPENAI_MAX_KNOWN_SPEAKERS = 4
OPENAI_LONGEST_REFERENCE_S = 10.0


def router(service: InferenceService) -> APIRouter:
    api = APIRouter(prefix="/v1")
    audio = APIRouter(prefix="/audio", route_class=FormUploadRoute)  # the body is read under the limits first

    @audio.post("/transcriptions", summary="OpenAI-compatible transcription (multipart form)")
    async def transcriptions(
        request: Request, form: Annotated[AudioForm, Form(media_type="multipart/form-data")]
    ) -> Response:
        return await _audio(service, request, form, task="transcribe")

    @audio.post("/translations", summary="OpenAI-compatible translation into English (multipart form)")
    async def translations(
        request: Request, form: Annotated[AudioForm, Form(media_type="multipart/form-data")]
    ) -> Response:
        return await _audio(service, request, form, task="translate")

    @api.get("/models", summary="The models this server serves (the first is the default), loaded or not")
    async def models() -> JSONResult:
        service.check_ready()
        return JSONResult({"object": "list", "data": [_model_card(service, name) for name in service.pool.names]})

    @api.get("/models/{model_id:path}", summary="One model")
    async def model(model_id: str) -> JSONResult:
        service.check_ready()
        try:
            name = service.pool.default if model_id == service.model_id else service.pool.resolve(model_id)
        except NotFoundError as exc:
            raise with_param(exc, "model") from None
        return JSONResult(_model_card(service, name))

    api.include_router(audio)  # keeps FormUploadRoute
    return api


def _model_card(service: InferenceService, name: str) -> dict:
    # ``created``: when this server started serving (Unix seconds); ``loaded``: whether it is in memory now.
    shown = service.model_id if name == service.pool.default else name
    return {"id": shown, "object": "model", "created": service.loaded_at, "owned_by": "whisper-endpoint",
            "loaded": service.pool.loaded(name), "default": name == service.pool.default}


async def _audio(service: InferenceService, request: Request, form: AudioForm, *, task: str) -> Response:
    # The deadline counts from the request's arrival (FormUploadRoute read the body before this runs).
    context = request.state.decode_context
    audio = await _file(form.file)
    warnings: list[str] = []
    parameters = _parameters(service, form, task, warnings)
    payload = {"inputs": audio, "parameters": parameters}
    if form.stream:
        return await openai_stream.stream(service, request, payload, context, task=task,
                                          response_format=form.response_format, warnings=warnings)
    # The body was read (FormUploadRoute), so what the connection says next is the client's disconnect.
    result = await service.run(payload, context, receive=request.receive)
    granularities = form.timestamp_granularities or ("segment",)
    context = formats.Context(task=task, granularities=granularities, subtitles=formats.subtitle_options(parameters))
    rendered = formats.render(result, form.response_format, context)
    headers = warnings_header(warnings + result.get("warnings", []))
    if isinstance(rendered.body, str):
        return Response(rendered.body, media_type=rendered.media_type, headers=headers)
    return JSONResult(rendered.body, headers=headers)


async def _file(upload) -> bytes:
    if upload is None:
        raise with_param(MissingInputError("the form has no 'file' (the audio file to transcribe)"), "file")
    if not isinstance(upload, UploadFile):
        raise with_param(InvalidInputError("'file' must be a file upload, not a text field"), "file")
    try:
        # Headerless G.711 is declared by the part's type or the file's name (adapters/raw_audio.py).
        kind = raw_audio.for_file_name(raw_audio.declared_type(upload.content_type), upload.filename)
        return raw_audio.as_file(await upload.read(), kind)
    except ClientError as exc:
        raise with_param(exc, "file")
    finally:
        await upload.close()


def _parameters(service: InferenceService, form: AudioForm, task: str, warnings: list[str]) -> dict:
    name, spec = form.response_format, formats.FORMATS[form.response_format]
    if form.stream and name not in openai_stream.STREAMED_FORMATS:
        raise with_param(UnsupportedOptionError(
            f"stream=true gives transcript events for response_format {', '.join(openai_stream.STREAMED_FORMATS)}; "
            f"{name} is not streamed: send stream=false"), "stream")
    if task == "translate" and spec.speakers == "required":
        raise with_param(InvalidParameterError(f"translations have no {name} format"), "response_format")
    if "word" in form.timestamp_granularities and name != "verbose_json":  # OpenAI accepts "segment" anywhere
        raise with_param(InvalidParameterError(
            "timestamp_granularities[]=word needs response_format=verbose_json"), "timestamp_granularities")
    extra = text_parameters(form.extra_fields())
    if spec.speakers == "required" and not formats.speakers_available(extra, service.diarization_available):
        raise with_param(UnsupportedOptionError(
            f"{name} needs speaker labels: diarization is off on this server (DIARIZATION_MODEL is not set); "
            "a recording with one speaker per channel can send multichannel=true"
        ), "response_format")
    overridden = sorted(set(extra) & set(_ROUTE_FIELDS))
    if overridden:
        raise with_param(InvalidParameterError(
            f"{', '.join(overridden)} cannot be set as a form field here: the route and response_format decide"
        ), overridden[0])
    granularities = form.timestamp_granularities or ["segment"]
    parameters = {**extra, **formats.parameters_for(name, extra), "task": task,
                  "return_timestamps": formats.timestamps_for(name, granularities, extra)}
    known = _known_speakers(form, warnings)
    if known and spec.speakers == "unused":
        warnings.append(f"known_speaker_names[] were not used: response_format={name} shows no speakers")
    elif known:
        parameters["known_speakers"] = known
    if form.model is not None:
        parameters["model"] = form.model  # the server resolves it (404 model_not_found if unknown)
    if form.language is not None:
        parameters["language"] = form.language
    if form.prompt:
        parameters["initial_prompt"] = form.prompt
    if form.temperature:  # 0 (OpenAI's default) leaves the backend's fallback schedule
        parameters["temperature"] = form.temperature
    if service.diarization_available and spec.speakers == "unused":
        parameters.setdefault("diarize", False)  # nothing in this format would show the speakers
    return parameters


def _known_speakers(form: AudioForm, warnings: list[str]) -> list[dict]:
    """``known_speaker_names[]`` + ``known_speaker_references[]`` -> the handler's ``known_speakers``, under
    OpenAI's limits (at most 4, each reference 2-10 s); each problem is a 4xx naming the field."""
    names = [name.strip() for name in form.known_speaker_names]
    references = form.known_speaker_references
    if len(names) != len(references):
        raise with_param(InvalidParameterError(
            f"known_speaker_names[] has {len(names)} entries and known_speaker_references[] {len(references)}: "
            "send one reference clip per name, in the same order"), "known_speaker_names[]")
    if len(names) > OPENAI_MAX_KNOWN_SPEAKERS:
        raise with_param(InvalidParameterError(
            f"at most {OPENAI_MAX_KNOWN_SPEAKERS} known speakers (got {len(names)})"), "known_speaker_names[]")
    if not all(names):
        raise with_param(InvalidParameterError("known_speaker_names[]: a name is empty"), "known_speaker_names[]")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise with_param(InvalidParameterError(
            f"known_speaker_names[]: {twice[0]!r} appears more than once; give each speaker one name"),
            "known_speaker_names[]")
    for index, reference in enumerate(references):
        try:
            decode_clip(reference, f"known_speaker_references[{index}]", longest=OPENAI_LONGEST_REFERENCE_S)
        except ClientError as exc:
            raise with_param(exc, "known_speaker_references[]") from None
    return [{"name": name, "audio": reference} for name, reference in zip(names, references)]
