"""Typed results shared by every backend, the diarization merge and the renderers.

Backends return these plain dataclasses; formatting into the response happens once, at the end.
Times are seconds from the start of the audio.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Word:
    start: float
    end: float
    text: str
    probability: float | None = None


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    words: tuple[Word, ...] | None = None  # filled only when word timestamps were computed
    # Whisper's own view of the window the segment was decoded in (None where a backend does not know).
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    compression_ratio: float | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class SpeakerTurn:
    start: float
    end: float
    speaker: str


@dataclass
class Transcript:
    """What an ASR backend produced for one audio input."""

    segments: list[Segment]
    language: str | None
    language_probability: float | None = None
    # How the backend ran, e.g. {"backend": "ctranslate2", "mode": "batched", "batch_size": 24}.
    decoding: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(segment.text for segment in self.segments).strip()

    @property
    def words(self) -> list[Word]:
        return [word for segment in self.segments for word in (segment.words or ())]
