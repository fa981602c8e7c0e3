"""A session's settings: what ``session.update`` set, merged field by field over the defaults
(OpenAI's: 24 kHz PCM16, server VAD with threshold 0.5, 300 ms prefix padding, 500 ms silence).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from whisper_endpoint.core.errors import EndpointError
from whisper_endpoint.pipeline.request import parse_parameters
from whisper_endpoint.serving.realtime.events import (
    BETA_FORMATS,
    AudioInput,
    EventError,
    Transcription,
    TurnDetection,
    new_id,
)

# GA format -> its beta name (audio/pcm at either rate is the beta's pcm16)
_BETA_NAMES = {kind: name for name, (kind, _) in BETA_FORMATS.items()}


@dataclass(frozen=True)
class SessionConfig:
    audio_format: str = "audio/pcm"  # or G.711: audio/pcmu, audio/pcma
    rate: int = 24000
    transcription: Transcription = field(default_factory=Transcription)
    turn_detection: Optional[TurnDetection] = field(default_factory=TurnDetection)
    id: str = field(default_factory=lambda: new_id("sess"))

    def updated(self, update: AudioInput, event_id: str | None = None) -> "SessionConfig":
        """This config with the fields ``update`` names replaced; ``EventError`` for a language or
        prompt the decoder would refuse (checked by the request schema, the one place for them)."""
        given = update.model_fields_set
        audio_format = update.format if "format" in given and update.format is not None else None
        config = replace(
            self,
            audio_format=audio_format.type if audio_format else self.audio_format,
            rate=audio_format.rate if audio_format else self.rate,
            transcription=(update.transcription or Transcription()) if "transcription" in given
            else self.transcription,
            turn_detection=update.turn_detection if "turn_detection" in given else self.turn_detection,
        )
        try:
            config.checked_parameters()
        except EndpointError as exc:
            raise EventError(f"session.audio.input.transcription: {exc.message}", "invalid_value",
                             param="session.audio.input.transcription", event_id=event_id) from None
        return config

    def decode_parameters(self) -> dict:
        """The handler parameters of this session's decodes."""
        parameters: dict = {"diarize": False}  # one speaker stream; live sessions never wait for diarization
        if self.transcription.model:
            parameters["model"] = self.transcription.model  # the server's model by that name (ASR_MODELS)
        if self.transcription.language:
            parameters["language"] = self.transcription.language
        if self.transcription.languages:
            parameters["languages"] = self.transcription.languages
        if self.transcription.prompt:
            parameters["initial_prompt"] = self.transcription.prompt
        return parameters

    def checked_parameters(self) -> None:
        parse_parameters(self.decode_parameters())

    def describe(self, *, beta: bool = False) -> dict:
        """The session object of ``session.created`` / ``session.updated`` (or the beta shape)."""
        vad = self.turn_detection.model_dump() if self.turn_detection is not None else None
        transcription = self.transcription.model_dump()
        if beta:
            return {"id": self.id, "object": "realtime.transcription_session",
                    "input_audio_format": _BETA_NAMES[self.audio_format],
                    "input_audio_transcription": transcription, "turn_detection": vad}
        # OpenAI's G.711 formats name no rate (it is 8 kHz)
        audio_format = {"type": self.audio_format, **({"rate": self.rate} if self.audio_format == "audio/pcm" else {})}
        return {"type": "transcription", "id": self.id, "object": "realtime.transcription_session",
                "audio": {"input": {"format": audio_format, "transcription": transcription, "turn_detection": vad}}}
