"""``POST /formats/{name}``: a transcript as the handler returned it (its JSON, speakers possibly renamed
by the client), rendered as a file: txt, srt, vtt or tsv, by the same renderers as every other route.
srt and vtt take the request parameters' subtitle options in the query string (``?max_line_width=32``).

The web page's downloads come from here, so each format is written once (``whisper_endpoint.formats``)
and a download with the speakers' new names is the API's file with those names. Only the fields those
formats read are checked; anything else in the body is ignored.
"""

from __future__ import annotations

from typing import Annotated, Optional

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from starlette.responses import Response

from whisper_endpoint import formats
from whisper_endpoint.adapters.errors import with_param
from whisper_endpoint.errors import InvalidParameterError
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
        body = await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
        try:
            # The subtitle options (max_line_width, ...) come in the query string, by the handler's rules.
            context = formats.Context(subtitles=formats.subtitle_options(request.query_params))
            transcript = Transcript.model_validate_json(body or b"{}")
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None
        rendered = formats.render(transcript.model_dump(exclude_none=True), name, context)
        disposition = f'attachment; filename="transcript.{formats.FORMATS[name].extension}"'
        return Response(rendered.body, media_type=rendered.media_type, headers={"Content-Disposition": disposition})

    return api
