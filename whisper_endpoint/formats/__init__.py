"""Every output format of a transcription, in one place: what each needs from the handler and how it is
rendered. The OpenAI routes, the batch command and ``whisper-endpoint transcribe --format`` all
render through ``render``; a new format is one entry in ``FORMATS``.

| format | what | needs |
|---|---|---|
| json, text | OpenAI's ``{"text", "usage"}``; the plain text | text only |
| srt, vtt | subtitles: readable cues cut from the words, one speaker each (``SubtitleOptions``) | word times |
| verbose_json | OpenAI's segments and/or words with times and confidence | segment or word times, confidence |
| diarized_json | OpenAI's segments with a speaker each | speakers (diarization, or multichannel) |
| txt, tsv | the text by speaker turn; one cue a row (start, end, speaker, text) | segment times |
| rttm | the diarization's own turns (multichannel: each channel's) | speaker turns (diarization, or multichannel) |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from whisper_endpoint.core.config import SubtitleOptions
from whisper_endpoint.formats import openai, subtitles, tables
from whisper_endpoint.formats.subtitles import Cue, cues, subtitle_cues

Timestamps = Literal["none", "segment", "word"]


@dataclass(frozen=True)
class Context:
    """What a renderer may need besides the result."""

    task: str = "transcribe"
    file_id: str = "audio"  # RTTM's file column
    granularities: Sequence[str] = ("segment",)  # verbose_json: "segment" and/or "word"
    subtitles: SubtitleOptions = SubtitleOptions()  # srt and vtt: how cues are cut


@dataclass(frozen=True)
class Format:
    media_type: str
    extension: str  # of the file the batch command writes
    render: Callable[[dict, Context], object]  # a dict for JSON bodies, else text
    timestamps: Timestamps = "segment"  # what the handler must return for it
    speakers: Literal["unused", "shown", "required"] = "shown"  # diarization's speaker runs
    turns: bool = False  # needs the diarization's own turns (return_speaker_turns)
    confidence: bool = False  # needs Whisper's confidence (return_confidence)
    readable: bool = False  # subtitles cut from the words: word times and each speaker's words


_TEXT = "text/plain; charset=utf-8"
FORMATS: dict[str, Format] = {
    "json": Format("application/json", "json", lambda r, c: openai.json_body(r, task=c.task), "none", "unused"),
    "text": Format(_TEXT, "text.txt", lambda r, c: openai.text(r), "none", "unused"),
    "srt": Format("application/x-subrip; charset=utf-8", "srt",
                  lambda r, c: subtitles.srt(subtitle_cues(r, c.subtitles)), "word", readable=True),
    "vtt": Format("text/vtt; charset=utf-8", "vtt",
                  lambda r, c: subtitles.vtt(subtitle_cues(r, c.subtitles)), "word", readable=True),
    "verbose_json": Format(
        "application/json", "verbose.json", lambda r, c: openai.verbose_json(
            r, task=c.task, words="word" in c.granularities, segments="segment" in c.granularities),
        speakers="unused", confidence=True),
    "diarized_json": Format("application/json", "diarized.json", lambda r, c: openai.diarized_json(r),
                            speakers="required"),
    "txt": Format(_TEXT, "txt", lambda r, c: tables.txt(r)),
    "tsv": Format("text/tab-separated-values; charset=utf-8", "tsv", lambda r, c: tables.tsv(r)),
    "rttm": Format(_TEXT, "rttm", lambda r, c: tables.rttm(r, c.file_id), "none", "required", turns=True),
}


@dataclass(frozen=True)
class Rendered:
    body: object  # dict for JSON formats, str otherwise
    media_type: str


def render(result: dict, name: str, context: Context = Context()) -> Rendered:
    """The handler's response in format ``name`` (a key of ``FORMATS``)."""
    fmt = FORMATS[name]
    return Rendered(fmt.render(result, context), fmt.media_type)


def timestamps_for(name: str, granularities: Sequence[str] = ("segment",), request: Mapping = {}) -> Timestamps:
    """The ``return_timestamps`` a format needs (verbose_json: words when asked for, else segments;
    subtitles: words, unless the request asks for one cue per segment)."""
    if name == "verbose_json" and "word" in granularities:
        return "word"
    if FORMATS[name].readable and not _readable(request):
        return "segment"
    return FORMATS[name].timestamps


def parameters_for(name: str, request: Mapping = {}) -> dict:
    """What a request (its ``parameters``) must ask the handler for, for this format."""
    fmt, parameters = FORMATS[name], {}
    if fmt.turns:
        parameters["return_speaker_turns"] = True
    if fmt.confidence:
        parameters["return_confidence"] = True
    if fmt.readable and _readable(request):
        parameters.update(return_timestamps="word", return_speaker_words=True)
    return parameters


def subtitle_options(request: Mapping) -> SubtitleOptions:
    """The request's subtitle options, by the rules every route applies (bad values raise ValidationError)."""
    return SubtitleOptions.model_validate(dict(request))


def _readable(request: Mapping) -> bool:
    try:
        return subtitle_options(request).subtitle_cues == "readable"
    except ValidationError:
        return True  # the handler names the bad value


def speakers_available(parameters: Mapping, diarization: bool) -> bool:
    """Whether a request gets speakers: from diarization, or one per channel (``multichannel``)."""
    try:
        multichannel = TypeAdapter(bool).validate_python(parameters.get("multichannel", False))
    except ValidationError:
        multichannel = False  # the handler names the bad value
    return diarization or multichannel


__all__ = ["FORMATS", "Context", "Cue", "Format", "Rendered", "SubtitleOptions", "cues", "parameters_for", "render",
           "speakers_available", "subtitle_cues", "subtitle_options", "timestamps_for"]
