"""The speaker library over HTTP: ``/v1/speakers`` (enrol, list, read, rename, add clips, delete).

``POST /v1/speakers`` takes ``{"name", "audio": [1-3 clips]}`` (the rules of ``known_speakers``) or
``{"name", "job_id", "speaker"}`` (a speaker of a finished diarized job, whose voice the job worker kept).
Each key reaches its tenant's entries only, and enrols from its tenant's jobs only (core/tenants.py).
Bodies are JSON under ``MAX_BODY_BYTES`` and the body timeout; decoding and embedding run on threads.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from fastapi import APIRouter, Request
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)
from starlette.responses import Response

from whisper_endpoint.adapters.errors import InvalidBodyError, NotFoundError
from whisper_endpoint.core import bounded_json
from whisper_endpoint.core.config import (
    MAX_CLIPS_PER_SPEAKER,
    KnownSpeaker,
    SpeakerName,
)
from whisper_endpoint.core.errors import InvalidParameterError, UnsupportedOptionError
from whisper_endpoint.jobs.store import SUCCEEDED
from whisper_endpoint.serving import auth
from whisper_endpoint.serving.limits import limited_stream
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.speakers.enrolment import decode_clip
from whisper_endpoint.speakers.library.store import LibraryError

_Id = Annotated[str, StringConstraints(min_length=1, max_length=128)]


class JobEnrolment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: SpeakerName
    job_id: _Id
    speaker: _Id


class Clips(BaseModel):
    model_config = ConfigDict(extra="forbid")

    audio: list[str] = Field(min_length=1, max_length=MAX_CLIPS_PER_SPEAKER)

    _one_or_more = field_validator("audio", mode="before")(KnownSpeaker._one_or_more.__func__)


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: SpeakerName


def with_library(handler, open_library):
    """A given, already loaded handler (tests, embedders) with the library opened for its diarizer: a
    copy, so the caller's handler stays as it was. Anything else passes through (the loader opens it)."""
    if handler is None or getattr(handler, "diarizer", None) is None or not hasattr(handler, "with_library"):
        return handler, None
    library = open_library(handler.diarizer, handler.speakers.voices)
    if library is None:
        return handler, None
    return handler.with_library(library), library


def router(service, jobs) -> APIRouter:
    router = APIRouter()

    def library():
        service.check_ready()
        if service.library is None:
            raise UnsupportedOptionError(
                "this server keeps no speaker library: it needs DIARIZATION_MODEL (and SPEAKERS_LIBRARY not false)",
                code="speaker_library_off")
        return service.library

    async def body(request: Request, model: type[BaseModel], where: str = "") -> BaseModel:
        raw = b"".join([chunk async for chunk in limited_stream(
            request, service.settings.max_body_bytes, service.settings.body_timeout_s)])
        try:
            data = bounded_json.loads(raw, "the body", max_depth=bounded_json.BODY_MAX_DEPTH, max_length=None)
        except bounded_json.JSONValueError as exc:
            raise InvalidBodyError(f"the body must be a JSON object, e.g. {{\"name\": \"Ann\", \"audio\": [...]}}; "
                                   f"it is {exc.problem}") from None
        if not isinstance(data, dict):
            raise InvalidBodyError(f"the body must be a JSON object, got {type(data).__name__}")
        if model is KnownSpeaker and "job_id" in data:
            model = JobEnrolment
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise InvalidParameterError(_described(exc)) from None

    async def embedded(clips: list[str]) -> list:
        diarizer = service.handler.diarizer

        def embed():
            return [diarizer.embed_voice(decode_clip(text, f"audio[{i}]")) for i, text in enumerate(clips)]

        return await anyio.to_thread.run_sync(embed)

    async def job_voice(enrolment: JobEnrolment, voices, tenant):
        job = await anyio.to_thread.run_sync(jobs.store.get, enrolment.job_id, tenant.only) \
            if jobs and jobs.store else None
        if job is None:
            raise NotFoundError(f"no job {enrolment.job_id!r}: it never existed, was deleted or has expired",
                                code="job_not_found")
        if job.status != SUCCEEDED:
            raise LibraryError(f"job {enrolment.job_id!r} is {job.status}: enrol from a job that succeeded",
                               code="job_not_finished")
        vector = await anyio.to_thread.run_sync(voices.job_voice, job.id, enrolment.speaker)
        if vector is None:
            kept = await anyio.to_thread.run_sync(voices.job_speakers, job.id)
            raise NotFoundError(f"job {job.id!r} kept no voice of speaker {enrolment.speaker!r}; its speakers: "
                                f"{', '.join(kept) or 'none (not diarized, or finished before this server kept voices)'}",
                                code="speaker_not_found")
        return [vector]

    @router.post("/v1/speakers", status_code=201, summary="Enrol a voice: clips of it, or a speaker of a finished job")
    async def enrol(request: Request) -> JSONResult:
        voices, tenant = library(), auth.tenant(request)
        enrolment = await body(request, KnownSpeaker)
        if isinstance(enrolment, JobEnrolment):
            embeddings = await job_voice(enrolment, voices, tenant)
        else:
            embeddings = await embedded(enrolment.audio)
        speaker = await anyio.to_thread.run_sync(voices.add, enrolment.name, embeddings, tenant.id)
        return JSONResult(speaker.public(), status_code=201, headers={"Location": f"/v1/speakers/{speaker.id}"})

    @router.get("/v1/speakers", summary="The library's speakers")
    async def listed(request: Request) -> JSONResult:
        speakers = await anyio.to_thread.run_sync(library().speakers, auth.tenant(request))
        return JSONResult({"object": "list", "data": [speaker.public() for speaker in speakers]})

    @router.get("/v1/speakers/{speaker_id}", summary="One speaker of the library")
    async def read(speaker_id: str, request: Request) -> JSONResult:
        return JSONResult((await anyio.to_thread.run_sync(library().get, speaker_id, auth.tenant(request))).public())

    @router.patch("/v1/speakers/{speaker_id}", summary="Rename a speaker")
    async def rename(speaker_id: str, request: Request) -> JSONResult:
        voices, tenant = library(), auth.tenant(request)
        await anyio.to_thread.run_sync(voices.get, speaker_id, tenant)  # 404 before reading a body for nothing
        change = await body(request, Rename)
        return JSONResult((await anyio.to_thread.run_sync(voices.rename, speaker_id, change.name, tenant)).public())

    @router.post("/v1/speakers/{speaker_id}/audio", summary="Add clips of a speaker's voice")
    async def add_audio(speaker_id: str, request: Request) -> JSONResult:
        voices, tenant = library(), auth.tenant(request)
        await anyio.to_thread.run_sync(voices.get, speaker_id, tenant)
        clips = await body(request, Clips)
        embeddings = await embedded(clips.audio)
        return JSONResult((await anyio.to_thread.run_sync(voices.add_clips, speaker_id, embeddings, tenant)).public())

    @router.delete("/v1/speakers/{speaker_id}", status_code=204, summary="Forget a speaker")
    async def delete(speaker_id: str, request: Request) -> Response:
        await anyio.to_thread.run_sync(library().delete, speaker_id, auth.tenant(request))
        return Response(status_code=204)

    return router


def _described(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "invalid speaker: " + "; ".join(parts)

