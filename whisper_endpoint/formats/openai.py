"""OpenAI's audio response bodies: json, text, verbose_json, diarized_json, with OpenAI's field names.

What Whisper-in-a-handler cannot know is null, never made up: a segment's ``seek``, ``tokens``,
``temperature``, ``avg_logprob``, ``compression_ratio`` and ``no_speech_prob`` (the handler does not
return them). ``usage`` is ``{"type": "duration", "seconds": <audio duration>}``.
"""

from __future__ import annotations

from functools import lru_cache

from whisper_endpoint.formats.subtitles import cues

UNKNOWN_SEGMENT_FIELDS = ("seek", "tokens", "temperature", "avg_logprob", "compression_ratio", "no_speech_prob")


def json_body(result: dict, *, task: str) -> dict:
    body = {"text": result["text"]}
    if task == "transcribe":
        body["usage"] = usage(result)
    return body


def text(result: dict) -> str:
    return result["text"] + "\n"


def usage(result: dict) -> dict:
    return {"type": "duration", "seconds": result["duration"]}


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


# Server-sent events of ``stream=true`` (OpenAI's transcription stream events).


def text_delta(delta: str) -> dict:
    return {"type": "transcript.text.delta", "delta": delta}


def text_done(result: dict, *, task: str, warnings: list[str]) -> dict:
    """The last event: the whole text, ``usage`` as in ``json``, and our warnings (OpenAI's events have no
    place for them, and the ``X-Warnings`` header is sent before any exists)."""
    return {"type": "transcript.text.done", **json_body(result, task=task), "warnings": warnings}


def text_segments(result: dict) -> list[dict]:
    """``transcript.text.segment`` events: diarized_json's segments (speaker, start, end, text)."""
    return diarized_json(result)["segments"]


def language_name(code: str | None) -> str | None:
    """OpenAI names the language ("english"); the handler gives Whisper's code ("en")."""
    if code is None:
        return None
    return _language_names().get(code, code)


@lru_cache(maxsize=1)
def _language_names() -> dict[str, str]:
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    return dict(LANGUAGES)
