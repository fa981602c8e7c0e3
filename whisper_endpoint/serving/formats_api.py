"""``POST /formats/{name}``: a transcript as the handler returned it (its JSON, speakers possibly renamed
by the client), rendered as a file: txt, srt, vtt or tsv, by the same renderers as every other route.
srt and vtt take the request parameters' subtitle options in the query string (``?max_line_width=32``).

The web page's downloads come from here, so each format is written once (``whisper_endpoint.formats``)
and a download with the speakers' new names is the API's file with those names. Only the fields those
formats read are checked; anything else in the body is ignored.

The body is bounded (FORMATS_MAX_BODY_BYTES, FORMATS_MAX_ITEMS: 413 past either), and parsing and
rendering run on a thread, in a slot of the admission gate like a decode: a big transcript costs
seconds of CPU and its objects' memory, and must not stall the event loop (``/health``) or run
without limit in parallel.
"""

from __future__ import annotations

from typing import Annotated, Optional

import anyio
from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import Response

from whisper_endpoint import formats
from whisper_endpoint.adapters import gc_quiet, stepped_json
from whisper_endpoint.adapters.errors import with_param
from whisper_endpoint.core import bounded_json
from whisper_endpoint.core.errors import InvalidParameterError, PayloadTooLargeError
from whisper_endpoint.serving.limits import read_body
from whisper_endpoint.serving.service import InferenceService

DOWNLOADS = ("txt", "srt", "vtt", "tsv")
# Seconds into the audio: JSON may carry NaN, Infinity or 1e308, which no subtitle clock can show.
Time = Optional[Annotated[float, Field(ge=0, le=1e7, allow_inf_nan=False)]]


def _one_line(name: str) -> str:
    # A line break in a name would end a subtitle cue or a TSV row.
    name = " ".join(name.split())
    if not name:
        raise ValueError("a speaker's name is empty")
    return name


SpeakerName = Annotated[str, Field(max_length=200), AfterValidator(_one_line)]


class Chunk(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str
    timestamp: tuple[Time, Time]
    speaker: Optional[SpeakerName] = None


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    speaker: SpeakerName
    text: str
    timestamp: tuple[Time, Time]
    words: Optional[list[Chunk]] = None  # return_speaker_words: srt and vtt cut their cues from them


class Transcript(BaseModel):
    """What txt, srt, vtt and tsv read of a handler response."""

    model_config = ConfigDict(extra="ignore")
    text: str = ""
    chunks: list[Chunk] = []
    speakers: list[Turn] = []
    segments: Optional[list[Chunk]] = None  # beside word chunks (return_confidence)


def router(service: InferenceService) -> APIRouter:
    settings = service.settings
    api = APIRouter()

    @api.post("/formats/{name}", summary="A transcript (the handler's JSON) as a txt, srt, vtt or tsv file")
    async def render(name: str, request: Request) -> Response:
        if name not in DOWNLOADS:
            raise with_param(InvalidParameterError(
                f"no format {name[:50]!r} here; this route renders {', '.join(DOWNLOADS)}"), "name")
        try:  # the subtitle options (max_line_width, ...) come in the query string, by the handler's rules
            context = formats.Context(subtitles=formats.subtitle_options(request.query_params))
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None
        body = await read_body(request, settings.formats_max_body_bytes, settings.body_timeout_s,
                               "FORMATS_MAX_BODY_BYTES")
        async with service.gate.slot():
            rendered = await anyio.to_thread.run_sync(_quietly_rendered, body, name, settings.formats_max_items,
                                                      context)
        disposition = f'attachment; filename="transcript.{formats.FORMATS[name].extension}"'
        return Response(rendered.body, media_type=rendered.media_type, headers={"Content-Disposition": disposition})

    return api


_LISTS = {"chunks": Chunk, "speakers": Turn, "segments": Chunk}


def _quietly_rendered(body: bytes, name: str, max_items: int, context: formats.Context) -> formats.Rendered:
    with gc_quiet.paused():  # a million short-lived objects: no full collections meanwhile
        return _render(body, name, max_items, context)


def _render(body: bytes, name: str, max_items: int, context: formats.Context) -> formats.Rendered:
    """Blocking (a thread): the body decoded and checked in steps (each short: the event loop gets the
    GIL between them), then rendered as ``name``."""
    try:
        bounded_json.check(body, "the transcript", max_depth=bounded_json.BODY_MAX_DEPTH)
        data = stepped_json.loads(body.decode("utf-8") if body else "{}", max_items)
    except bounded_json.JSONValueError:
        raise
    except stepped_json.TooManyItems:
        raise PayloadTooLargeError(
            f"the transcript has more than {max_items} chunks, speaker turns and segments, the most this route "
            "renders (setting FORMATS_MAX_ITEMS)", code="too_many_items") from None
    except bounded_json.PARSER_ERRORS as exc:  # UnicodeDecodeError included
        raise RequestValidationError([{"type": "json_invalid", "loc": (), "msg": f"Invalid JSON: {exc}",
                                       "input": ""}]) from None
    errors: list = []
    if isinstance(data, dict):  # the long lists one element at a time; their models are then taken as they are
        data = {**data, **{field: _checked(data[field], model, field, errors) for field, model in _LISTS.items()
                           if isinstance(data.get(field), list)}}
    try:
        transcript = Transcript.model_validate(data)
    except ValidationError as exc:
        errors += exc.errors(include_url=False)
    if errors:
        raise RequestValidationError(errors)
    return formats.render(transcript.model_dump(exclude_none=True), name, context)


def _checked(items: list, model: type[BaseModel], field: str, errors: list) -> list:
    checked = []
    for index, item in enumerate(items):
        try:
            checked.append(model.model_validate(item))
        except ValidationError as exc:
            errors += [{**error, "loc": (field, index, *error["loc"])} for error in exc.errors(include_url=False)]
    return checked
