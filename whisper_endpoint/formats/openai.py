"""OpenAI's audio response bodies: json, text, verbose_json, diarized_json, with OpenAI's field names.

What the handler does not return is null, never made up: a segment's ``seek`` and ``tokens``, and its
``avg_logprob``, ``no_speech_prob``, ``compression_ratio`` or ``temperature`` where the backend does not
know them. ``usage`` is ``{"type": "duration", "seconds": <audio duration>}``.
"""

from __future__ import annotations

from functools import lru_cache

from whisper_endpoint.formats.subtitles import cues_with_languages

UNKNOWN_SEGMENT_FIELDS = ("seek", "tokens")
# Whisper's confidence, from the handler's chunks (``return_confidence``); null where a backend does not know.
CONFIDENCE_FIELDS = ("avg_logprob", "no_speech_prob", "compression_ratio", "temperature")


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
    """OpenAI's body: ``segments`` and/or ``words`` as ``timestamp_granularities[]`` asked. Segments carry
    Whisper's confidence (the handler's ``return_confidence``), words also their ``probability`` (not an
    OpenAI field; clients that do not know it ignore it)."""
    body = {
        "task": task,
        "language": "english" if task == "translate" else language_name(result.get("language")),
        "duration": result["duration"],
        "text": result["text"],
    }
    if segments:  # when the chunks are words, the handler gives the segments beside them
        body["segments"] = [_segment(index, chunk) for index, chunk in
                            enumerate(result.get("segments", result["chunks"]))]
    if words:
        body["words"] = [
            {"word": chunk["text"].strip(), "start": chunk["timestamp"][0], "end": chunk["timestamp"][1],
             **({"probability": chunk["probability"]} if "probability" in chunk else {})}
            for chunk in result["chunks"]
        ]
    if task == "transcribe":
        body["usage"] = usage(result)
    return body


def _segment(index: int, chunk: dict) -> dict:
    start, end = chunk["timestamp"]
    return {"id": index, "start": start, "end": end, "text": chunk["text"],
            **dict.fromkeys(UNKNOWN_SEGMENT_FIELDS), **{name: chunk.get(name) for name in CONFIDENCE_FIELDS},
            **({"language": chunk["language"]} if "language" in chunk else {})}  # issue 58; not OpenAI's


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
                **({"language": language} if language else {}),  # issue 58; not OpenAI's
            }
            for index, ((start, end, text, speaker), language) in enumerate(cues_with_languages(result))
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
