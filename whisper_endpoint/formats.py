"""The handler's response in OpenAI's audio response formats.

json, text, srt, vtt, verbose_json, diarized_json, with OpenAI's field names. What Whisper-in-a-handler
cannot know is null, never made up: a segment's ``seek``, ``tokens``, ``temperature``, ``avg_logprob``,
``compression_ratio`` and ``no_speech_prob`` (the handler does not return them). ``usage`` is
``{"type": "duration", "seconds": <audio duration>}``. With diarization, srt and vtt cues are the
speaker runs, labelled (``[SPEAKER_00] text`` in srt, ``<v SPEAKER_00>text`` in vtt).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

Cue = tuple[float, float, str, "str | None"]  # start, end, text, speaker

UNKNOWN_SEGMENT_FIELDS = ("seek", "tokens", "temperature", "avg_logprob", "compression_ratio", "no_speech_prob")


@dataclass(frozen=True)
class Rendered:
    body: object  # dict for JSON formats, str otherwise
    media_type: str


def render(result: dict, response_format: str, *, task: str, words: bool, segments: bool) -> Rendered:
    if response_format == "text":
        return Rendered(result["text"] + "\n", "text/plain; charset=utf-8")
    if response_format == "srt":
        return Rendered(srt(cues(result)), "application/x-subrip; charset=utf-8")
    if response_format == "vtt":
        return Rendered(vtt(cues(result)), "text/vtt; charset=utf-8")
    if response_format == "verbose_json":
        return Rendered(verbose_json(result, task=task, words=words, segments=segments), "application/json")
    if response_format == "diarized_json":
        return Rendered(diarized_json(result), "application/json")
    body = {"text": result["text"]}
    if task == "transcribe":
        body["usage"] = usage(result)
    return Rendered(body, "application/json")


def usage(result: dict) -> dict:
    return {"type": "duration", "seconds": result["duration"]}


def cues(result: dict) -> list[Cue]:
    """Speaker runs when the audio was diarized, else the segments."""
    if result.get("speakers"):
        lines = [(item["timestamp"], item["text"], item["speaker"]) for item in result["speakers"]]
    else:
        lines = [(chunk["timestamp"], chunk["text"], None) for chunk in result["chunks"]]
    out = []
    for (start, end), text, speaker in lines:
        if text.strip():
            start = float(start or 0.0)
            out.append((start, float(end if end is not None else start), text.strip(), speaker))
    return out


def srt(lines: list[Cue]) -> str:
    blocks = []
    for number, (start, end, text, speaker) in enumerate(lines, 1):
        label = f"[{speaker}] " if speaker else ""
        blocks.append(f"{number}\n{_clock(start, ',')} --> {_clock(end, ',')}\n{label}{text}\n")
    return "\n".join(blocks)


def vtt(lines: list[Cue]) -> str:
    blocks = ["WEBVTT\n"]
    for start, end, text, speaker in lines:
        text = _vtt_escape(text)
        if speaker:
            text = f"<v {_vtt_escape(speaker)}>{text}"
        blocks.append(f"{_clock(start, '.')} --> {_clock(end, '.')}\n{text}\n")
    return "\n".join(blocks)


def verbose_json(result: dict, *, task: str, words: bool, segments: bool) -> dict:
    body = {
        "task": task,
        "language": "english" if task == "translate" else language_name(result.get("language")),
        "duration": result["duration"],
        "text": result["text"],
    }
    if segments:
        body["segments"] = [
            {"id": index, "start": start, "end": end, "text": chunk["text"], **dict.fromkeys(UNKNOWN_SEGMENT_FIELDS)}
            for index, chunk in enumerate(result["chunks"])
            for start, end in [chunk["timestamp"]]
        ]
    if words:
        body["words"] = [
            {"word": chunk["text"].strip(), "start": chunk["timestamp"][0], "end": chunk["timestamp"][1]}
            for chunk in result["chunks"]
        ]
    if task == "transcribe":
        body["usage"] = usage(result)
    return body


def diarized_json(result: dict) -> dict:
    return {
        "task": "transcribe",
        "duration": result["duration"],
        "text": result["text"],
        "segments": [
            {
                "type": "transcript.text.segment",
                "id": f"seg_{index}",
                "start": start,
                "end": end,
                "text": text,
                "speaker": speaker,
            }
            for index, (start, end, text, speaker) in enumerate(cues(result))
        ],
        "usage": usage(result),
    }


def language_name(code: str | None) -> str | None:
    """OpenAI names the language ("english"); the handler gives Whisper's code ("en")."""
    if code is None:
        return None
    return _language_names().get(code, code)


@lru_cache(maxsize=1)
def _language_names() -> dict[str, str]:
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    return dict(LANGUAGES)


def _clock(seconds: float, decimal: str) -> str:
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
