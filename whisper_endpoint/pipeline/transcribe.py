"""A request's ASR step and speaker step run together on one signal: the ASR (``asr_step.py``) with the
diarization alongside it (speakers/alongside.py), then the speakers of the words (speakers/step.py).

The handler transcribes a mono request with ``AsrWithSpeakers.transcribe``, and each channel of a
multichannel one (``multichannel/``); a long recording (``blocks/runner.py``) has each block ``heard``
(the ASR and its diarization, not yet labelled), links the blocks' speakers, then ``label``s the whole.
``Transcribed.voices`` are the voices the speakers were found with, for a request that keeps them (a job,
whose speakers can be enrolled from its result).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from whisper_endpoint.asr.base import ASRBackend
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.types import SAMPLE_RATE, Speakers, Transcript
from whisper_endpoint.pipeline import asr_step
from whisper_endpoint.speakers.step import Heard, RequestSpeakers, Voiceprints


@dataclass(frozen=True)
class Transcribed:
    """One signal's transcript, its speakers (None: not diarized) and the voices found (label in the response
    -> centroid; empty unless the request keeps them)."""

    transcript: Transcript
    speakers: Speakers | None = None
    voices: Voiceprints = field(default_factory=dict)


@dataclass(frozen=True)
class AsrWithSpeakers:
    """One request's ASR step (the loaded backend) and speaker step (``RequestSpeakers``), run together."""

    asr: ASRBackend
    speakers: RequestSpeakers

    def transcribe(self, samples, config: InferenceConfig, context: DecodeContext) -> Transcribed:
        """One mono signal (``config``: the request's, or a channel's): its transcript and, when diarized,
        its speakers, the diarization running during the ASR."""
        return self.label(self.heard(samples, config, context), config, context)

    def heard(self, samples, config: InferenceConfig, context: DecodeContext) -> Heard:
        """``samples`` through the ASR step with ``config``, the diarization beside it (with ``config``'s
        speaker counts) when the request is diarized; a diarization not needed (no speech found) stops."""
        speakers = self.speakers
        duration = len(samples) / SAMPLE_RATE
        if not speakers.diarized:
            return Heard(samples, asr_step.transcribe_speech(self.asr, samples, config, context), None, duration)
        with speakers.alongside(samples, config, context) as diarization:
            transcript = asr_step.transcribe_speech(self.asr, samples, speakers.asr_config(config), context)
            found = None if asr_step.found_none(transcript) else diarization()
        return Heard(samples, transcript, found, duration)

    def label(self, heard: Heard, config: InferenceConfig, context: DecodeContext) -> Transcribed:
        """``heard``'s transcript with its speakers (``config``: what they show) and the voices found."""
        labelled = self.speakers.label(heard, config, context)
        return Transcribed(heard.transcript, labelled.speakers, labelled.voices)
