"""Typed results shared by every backend, the diarization merge and the renderers.

Backends return these plain dataclasses; formatting into the response happens once, at the end.
Times are seconds from the start of the audio.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

# The rate every input is decoded and resampled to, and the rate the models take (samples per second).
SAMPLE_RATE = 16000


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
    language: str | None = None  # the language it was decoded in (None where a backend does not say)

    def later(self, seconds: float) -> Segment:
        """This segment, and its words, ``seconds`` later."""
        if not seconds:
            return self
        words = None if self.words is None else tuple(
            replace(word, start=word.start + seconds, end=word.end + seconds) for word in self.words)
        return replace(self, start=self.start + seconds, end=self.end + seconds, words=words)


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


def clamped(seconds: float, duration: float | None) -> float:
    """A time as the response gives it: rounded to ms and never past the audio's end (Whisper's last
    timestamp can overshoot it)."""
    return round(seconds if duration is None else min(seconds, duration), 3)


def clock(seconds: float) -> str:
    """A time for people to read: ``M:SS``, or ``H:MM:SS`` from an hour on."""
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def span(start: float, end: float, duration: float | None) -> list[float]:
    """``[start, end]`` as the response gives it (``clamped``)."""
    return [clamped(start, duration), clamped(end, duration)]


@dataclass
class Speakers:
    """The speaker step's result for one signal, in the response's terms (render.py names the keys)."""

    runs: list[dict]  # consecutive words of one speaker: the response's ``speakers``
    turns: list[dict] | None = None  # the diarization's turns (``return_speaker_turns``)
    matches: list[dict] | None = None  # known speakers: which speaker took which name (``known_speakers``)
    embeddings: dict | None = None  # ``return_speaker_embeddings``
    warnings: list[str] = field(default_factory=list)  # the diarization's, and segments labelled whole


@dataclass(frozen=True)
class ChannelResult:
    """One channel of a multichannel request, transcribed on its own."""

    index: int
    name: str
    transcript: Transcript | None  # None: the channel was silent and not transcribed
    speakers: Speakers | None = None  # its own speakers, when the channel was diarized


@dataclass(frozen=True)
class MergedChannels:
    """The channels' results put together in time order (multichannel/merge.py)."""

    channels: list[ChannelResult]
    speakers: list[dict]  # every channel's turns in time order: the response's ``speakers``
    main: Transcript | None  # the channel that said the most: its language is the response's
    speaker_turns: list[dict] | None = None  # when asked

    @property
    def transcribed(self) -> list[ChannelResult]:
        return [r for r in self.channels if r.transcript is not None]
