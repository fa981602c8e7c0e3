"""The OpenAI Realtime transcription events this server speaks, as pydantic models (client events)
and small builders (server events).

GA shapes (``session.update`` with ``session.type: "transcription"`` and ``session.audio.input``);
the beta ``transcription_session.update`` (``input_audio_format``, ``input_audio_transcription``,
``turn_detection`` at the top of the session) is accepted and mapped onto the same settings.
Fields this server has no use for (``noise_reduction``, ``include``, ...) are ignored.
"""

from __future__ import annotations

import secrets
from typing import Literal, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

# The beta API's format names and the GA format each is: pcm16 is 24 kHz PCM, the G.711 ones 8 kHz.
BETA_FORMATS = {"pcm16": ("audio/pcm", 24000), "g711_ulaw": ("audio/pcmu", 8000), "g711_alaw": ("audio/pcma", 8000)}


class _Event(BaseModel):
    model_config = ConfigDict(extra="ignore")


class TurnDetection(_Event):
    type: Literal["server_vad"] = "server_vad"
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    prefix_padding_ms: int = Field(300, ge=0, le=5000)
    silence_duration_ms: int = Field(500, ge=32, le=10000)


class AudioFormat(_Event):
    """PCM16 at 24 or 16 kHz, or G.711 (telephone lines) at 8 kHz: ``audio/pcmu`` (mu-law), ``audio/pcma``
    (A-law); OpenAI's G.711 formats carry no rate."""

    type: Literal["audio/pcm", "audio/pcmu", "audio/pcma"] = "audio/pcm"
    rate: Literal[24000, 16000, 8000] | None = Field(None, validate_default=True)  # None: the type's own

    @field_validator("rate")
    @classmethod
    def _rate_of_type(cls, rate: int | None, info: ValidationInfo) -> int | None:
        kind = info.data.get("type")  # absent when the type itself was wrong (that error is reported)
        if kind == "audio/pcm" and rate == 8000:
            raise ValueError("audio/pcm takes 24000 or 16000; 8 kHz telephone audio is audio/pcmu or audio/pcma")
        if kind in ("audio/pcmu", "audio/pcma") and rate not in (None, 8000):
            raise ValueError(f"{kind} (G.711) is 8000 Hz; it takes no other rate")
        return rate or {"audio/pcm": 24000}.get(kind, 8000)


class Transcription(_Event):
    model: Optional[str] = Field(None, max_length=200)  # a name of GET /v1/models (OpenAI's names: the default)
    language: Optional[str] = None
    prompt: Optional[str] = Field(None, max_length=2000)
    # This server's extensions: the languages each utterance may be in (detected among them; each
    # completed event says its "language"), and "speaker" on each completed event (the library's name
    # or SPEAKER_NN).
    languages: Optional[list[str]] = None
    speaker_labels: bool = False


class AudioInput(_Event):
    format: Optional[AudioFormat] = None
    transcription: Optional[Transcription] = None
    turn_detection: Optional[TurnDetection] = None  # null: the client commits by itself


class _Audio(_Event):
    input: AudioInput = Field(default_factory=AudioInput)


class Session(_Event):
    """The GA session object of ``session.update`` (only what a transcription session uses)."""

    type: Literal["transcription"] = "transcription"
    audio: _Audio = Field(default_factory=_Audio)


class BetaSession(_Event):
    input_audio_format: Optional[Literal["pcm16", "g711_ulaw", "g711_alaw"]] = None
    input_audio_transcription: Optional[Transcription] = None
    turn_detection: Optional[TurnDetection] = None

    def as_input(self) -> AudioInput:
        values: dict = {}
        if "input_audio_format" in self.model_fields_set and self.input_audio_format is not None:
            kind, rate = BETA_FORMATS[self.input_audio_format]
            values["format"] = AudioFormat(type=kind, rate=rate)
        if "input_audio_transcription" in self.model_fields_set:
            values["transcription"] = self.input_audio_transcription
        if "turn_detection" in self.model_fields_set:
            values["turn_detection"] = self.turn_detection
        return AudioInput(**values)


class _ClientEvent(_Event):
    """What every client event may carry: its id, quoted back in an error event about it."""

    event_id: Optional[str] = None


class SessionUpdate(_ClientEvent):
    type: Literal["session.update"]
    session: Session


class BetaSessionUpdate(_ClientEvent):
    type: Literal["transcription_session.update"]
    session: BetaSession


class Append(_ClientEvent):
    type: Literal["input_audio_buffer.append"]
    audio: str


class Commit(_ClientEvent):
    type: Literal["input_audio_buffer.commit"]


class Clear(_ClientEvent):
    type: Literal["input_audio_buffer.clear"]


ClientEvent = Union[SessionUpdate, BetaSessionUpdate, Append, Commit, Clear]
_TYPES = {model.model_fields["type"].annotation.__args__[0]: model for model in ClientEvent.__args__}


class EventError(Exception):
    """A client event that cannot be applied; becomes an ``error`` event, and the session goes on."""

    def __init__(self, message: str, code: str = "invalid_event", *, param: str | None = None,
                 event_id: str | None = None):
        super().__init__(message)
        self.message, self.code, self.param, self.event_id = message, code, param, event_id


def parse_client_event(data) -> ClientEvent:
    """Validate one decoded JSON event; ``EventError`` names what is wrong."""
    if not isinstance(data, dict):
        raise EventError(f"an event must be a JSON object, got {type(data).__name__}")
    event_id = data.get("event_id") if isinstance(data.get("event_id"), str) else None
    kind = data.get("type")
    model = _TYPES.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise EventError(f"unknown event type {str(kind)[:100]!r}; this server accepts {', '.join(_TYPES)}",
                         "unknown_event_type", param="type", event_id=event_id)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise EventError(f"{kind}: {where}: {first['msg']}", "invalid_value", param=where,
                         event_id=event_id) from None


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def server_event(kind: str, **fields) -> dict:
    return {"type": kind, "event_id": new_id("event"), **fields}


def error_event(error: EventError) -> dict:
    body = {"type": "invalid_request_error", "code": error.code, "message": error.message,
            "param": error.param, "event_id": error.event_id}
    return server_event("error", error=body)
