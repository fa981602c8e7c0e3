"""The request's speaker step, loaded once beside the ASR step: what a request asks of the speakers, the
diarization alongside the ASR, and the speakers of the words.

``SpeakerStep`` holds what every request shares (the diarizer, ``SPEAKERS_DIR``'s voiceprints, the
speaker library); ``SpeakerStep.request(config, warnings)`` gives one request's ``RequestSpeakers``: the
voices it names (its clips checked before any decoding), whether it is diarized, and ``alongside``, the
block the ASR runs in while the diarization runs beside it (``alongside.py``). The handler's flow:
parse -> ``speakers.request`` -> ASR inside ``alongside`` -> ``finish(transcript)`` -> render.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from whisper_endpoint.core.config import InferenceConfig, ModelSettings
from whisper_endpoint.core.decode_context import DIARIZING, DecodeContext
from whisper_endpoint.core.tenants import DEFAULT
from whisper_endpoint.core.types import SAMPLE_RATE, Speakers, Transcript
from whisper_endpoint.diarization.base import Diarization
from whisper_endpoint.speakers import alongside, labels
from whisper_endpoint.speakers import names as speaker_names
from whisper_endpoint.speakers.labels import Voiceprints


class SpeakerStep:
    """The diarizer named by the settings (None: diarization off), ``SPEAKERS_DIR``'s voiceprints and the
    speaker library. ``shared``: another step whose models and voices this one uses (a server with several
    ASR models loads the diarization once). ``open_library``: (diarizer, SPEAKERS_DIR's voices) -> the
    library whose voices every diarized request names, or None."""

    def __init__(self, settings: ModelSettings, repository_path: str = "", *, shared: SpeakerStep | None = None,
                 open_library: Callable | None = None):
        self.alongside_s = settings.diarization_alongside_s
        if shared is not None:
            self.diarizer, self.voices, self.library = shared.diarizer, shared.voices, shared.library
            return
        self.diarizer = labels.diarizer_from_settings(settings, repository_path)
        self.voices = labels.load_voices(settings, self.diarizer)  # SPEAKERS_DIR, once
        self.library = open_library(self.diarizer, self.voices) if open_library else None

    def with_library(self, library) -> SpeakerStep:
        """A copy that names ``library``'s voices (the models are shared, not copied)."""
        step = copy.copy(self)
        step.library = library
        return step

    def request(self, config: InferenceConfig, warnings: list[str], tenant: str = DEFAULT) -> RequestSpeakers:
        """What ``config`` asks of the speakers, for ``tenant`` (whose library voices name them). Known
        speakers' clips are decoded and embedded here, so a bad clip is refused before any decoding; a
        speaker option that cannot apply is explained in ``warnings``."""
        voices = labels.request_voices(self.diarizer, config, self.voices, self.library, tenant)
        if config.multichannel:
            wanted = config.diarize_channels and self.diarizer is not None
            if config.diarize_channels and self.diarizer is None:
                warnings.append("diarize_channels was ignored: diarization is off on this endpoint "
                                "(DIARIZATION_MODEL is not set); each channel is one speaker")
        else:
            wanted = labels.diarization_wanted(self.diarizer, config, warnings)
        return RequestSpeakers(self, config, voices, wanted)


@dataclass
class RequestSpeakers:
    """One request's speaker step: ``diarized`` tells whether its transcripts get speakers."""

    step: SpeakerStep
    config: InferenceConfig
    voices: Voiceprints
    diarized: bool

    def asr_config(self, config: InferenceConfig) -> InferenceConfig:
        """``config`` as the ASR needs it: speakers are given word by word (the chunks still come as asked)."""
        return config.model_copy(update={"return_timestamps": "word"}) if self.diarized else config

    @contextmanager
    def alongside(self, samples, config: InferenceConfig, context: DecodeContext, *,
                  found_no_speech: Callable[[Transcript], bool]) -> Iterator[Callable[[Transcript], Speakers | None]]:
        """The block the ASR of ``samples`` (with ``config``: a channel's, say) runs in, its diarization
        beside it; yields ``finish``: transcript -> its speakers (None when not diarized; nobody when the
        ASR found no speech). Leaving the block without finishing stops the diarization."""
        with self.diarizing(samples, config, context, found_no_speech=found_no_speech) as diarization:

            def finish(transcript: Transcript) -> Speakers | None:
                if not self.diarized:
                    return None
                found = diarization(transcript)
                if found is None:  # no speech, no speakers
                    return labels.no_speakers(config)
                return self.label(transcript, found, samples, len(samples) / SAMPLE_RATE, config, context)

            yield finish

    @contextmanager
    def diarizing(self, samples, config: InferenceConfig, context: DecodeContext, *,
                  found_no_speech: Callable[[Transcript], bool]) -> Iterator[Callable[[Transcript], Diarization | None]]:
        """As ``alongside``, but ``finish`` gives the diarization itself (None: not diarized, or no speech)."""
        if not self.diarized:
            yield lambda transcript: None
            return
        step = self.step
        with alongside.diarizing(step.diarizer, samples, config, context, longest_s=step.alongside_s) as diarization:

            def finish(transcript: Transcript) -> Diarization | None:
                if found_no_speech(transcript):
                    return None
                context.stage(DIARIZING)  # the rest of the diarization; a stop reaches it at its next step
                return diarization()

            yield finish

    def label(self, transcript: Transcript, diarization: Diarization, samples, duration: float,
              config: InferenceConfig, context: DecodeContext) -> Speakers:
        """The speakers of ``transcript``'s words from ``diarization`` (names, runs, what ``config`` asks);
        ``samples`` embed a speaker the diarization gave no centroid (an empty array: none is embedded)."""
        speakers = labels.label_speakers(self.step.diarizer, samples, transcript, config, duration, self.voices,
                                         kept=context.speaker_voices, diarization=diarization)
        context.check()
        return speakers

    def voices_of(self, diarization: Diarization, samples) -> dict:
        """Each speaker's centroid (the pipeline's, else embedded from ``samples``): label -> vector."""
        return speaker_names.centroids(diarization.embeddings, diarization.exclusive, samples,
                                       self.step.diarizer.embed_voice)
