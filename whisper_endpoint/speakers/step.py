"""The request's speaker step, loaded once beside the ASR step: which diarizer, what a request asks of the
speakers, the diarization alongside the ASR, and the speakers of the words (named, merged into ``Speakers``).

Diarization is off unless ``DIARIZATION_MODEL`` is set, as in the reference handler: ``embedded``
(no account, no network), a Hub pipeline id (with ``HF_TOKEN``) or a local directory / config.yaml
(``whisper_endpoint/diarization/``). When it is on, the ASR runs with word timestamps and every word
gets the speaker whose turn covers it most (``merge.py``); ``speakers`` in the response is the list of
consecutive runs of one speaker. Known speakers (``SPEAKERS_DIR``, ``known_speakers``, the speaker
library) rename the speakers they match (``names.py``) before the merge, so every format shows the names.

``SpeakerStep`` holds what every request shares (the diarizer, ``SPEAKERS_DIR``'s voiceprints, the
speaker library); ``SpeakerStep.request(config, warnings)`` gives one request's ``RequestSpeakers``: the
voices it names (its clips checked before any decoding), whether it is diarized, ``alongside``, the
block the ASR runs in while the diarization runs beside it (``alongside.py``), and ``label``: the speakers
of what the two ``Heard``. pipeline/transcribe.py runs the two steps together; the handler's flow:
parse -> ``speakers.request`` -> ASR inside ``alongside`` -> ``label`` -> render.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from whisper_endpoint.core.config import InferenceConfig, ModelSettings
from whisper_endpoint.core.decode_context import DIARIZING, DecodeContext
from whisper_endpoint.core.errors import ModelLoadError, UnsupportedOptionError
from whisper_endpoint.core.tenants import DEFAULT
from whisper_endpoint.core.types import (
    Speakers,
    SpeakerTurn,
    Transcript,
    clamped,
)
from whisper_endpoint.diarization.base import Diarization
from whisper_endpoint.speakers import alongside, overlap
from whisper_endpoint.speakers import names as speaker_names
from whisper_endpoint.speakers.enrolment import (
    read_speakers_dir,
    request_clips,
    voiceprints,
)
from whisper_endpoint.speakers.merge import lacks_words, merge_speakers

SPEAKER_OPTIONS = ("num_speakers", "min_speakers", "max_speakers", "return_speaker_turns", "return_speaker_words",
                   "return_speaker_embeddings")
Voiceprints = dict[str, np.ndarray]


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
        self.diarizer = diarizer_from_settings(settings, repository_path)
        self.voices = load_voices(settings, self.diarizer)  # SPEAKERS_DIR, once
        self.library = open_library(self.diarizer, self.voices) if open_library else None

    def with_library(self, library) -> SpeakerStep:
        """A copy that names ``library``'s voices (the models are shared, not copied)."""
        step = copy.copy(self)
        step.library = library
        return step

    def request(self, config: InferenceConfig, warnings: list[str], tenant: str = DEFAULT, *,
                keep_voices: bool = False) -> RequestSpeakers:
        """What ``config`` asks of the speakers, for ``tenant`` (whose library voices name them). Known
        speakers' clips are decoded and embedded here, so a bad clip is refused before any decoding; a
        speaker option that cannot apply is explained in ``warnings``. ``keep_voices``: the voices found
        come back with the speakers (``Labelled.voices``)."""
        voices = request_voices(self.diarizer, config, self.voices, self.library, tenant)
        if config.multichannel:
            wanted = config.diarize_channels and self.diarizer is not None
            if config.diarize_channels and self.diarizer is None:
                warnings.append("diarize_channels was ignored: diarization is off on this endpoint "
                                "(DIARIZATION_MODEL is not set); each channel is one speaker")
        else:
            wanted = diarization_wanted(self.diarizer, config, warnings)
        return RequestSpeakers(self, voices, wanted, keep_voices)


@dataclass(frozen=True)
class Heard:
    """One signal and what the ASR and the diarization beside it found in it: ``diarization`` None when not
    diarized or when no speech was found. ``samples`` embed a speaker the diarization gave no centroid (an
    empty array: none is embedded); ``duration``: the signal's seconds."""

    samples: np.ndarray
    transcript: Transcript
    diarization: Diarization | None
    duration: float


@dataclass(frozen=True)
class Labelled:
    """The speakers of one signal (None: not diarized) and the voices found: each speaker's centroid under
    its label in the response, when the request keeps them (else empty)."""

    speakers: Speakers | None
    voices: Voiceprints = field(default_factory=dict)


@dataclass
class RequestSpeakers:
    """One request's speaker step: ``voices`` name its speakers, ``diarized`` tells whether its transcripts
    get speakers, ``keep_voices`` whether the voices found come back with them (a job's, to enrol from)."""

    step: SpeakerStep
    voices: Voiceprints
    diarized: bool
    keep_voices: bool = False

    def asr_config(self, config: InferenceConfig) -> InferenceConfig:
        """``config`` as the ASR needs it: speakers are given word by word (the chunks still come as asked)."""
        return config.model_copy(update={"return_timestamps": "word"}) if self.diarized else config

    @contextmanager
    def alongside(self, samples, config: InferenceConfig,
                  context: DecodeContext) -> Iterator[Callable[[], Diarization]]:
        """The block a diarized request's ASR of ``samples`` runs in, the diarization (``config``'s speaker
        counts) beside it; yields the function that waits for the rest of the diarization. Leaving the block
        without calling it (the ASR failed, stopped or found no speech) stops the diarization."""
        step = self.step
        with alongside.diarizing(step.diarizer, samples, config, context, longest_s=step.alongside_s) as diarization:

            def rest() -> Diarization:
                context.stage(DIARIZING)  # the rest of the diarization; a stop reaches it at its next step
                return diarization()

            yield rest

    def label(self, heard: Heard, config: InferenceConfig, context: DecodeContext) -> Labelled:
        """The speakers of ``heard``'s words (names, runs, what ``config`` asks): None when the request is not
        diarized, nobody when no speech was found."""
        if not self.diarized:
            return Labelled(None)
        if heard.diarization is None:  # no speech, no speakers
            return Labelled(no_speakers(config))
        labelled = _labelled(self.step.diarizer, heard, config, self.voices, keep=self.keep_voices)
        context.check()
        return labelled

    def voices_of(self, diarization: Diarization, samples) -> dict:
        """Each speaker's centroid (the pipeline's, else embedded from ``samples``): label -> vector."""
        return speaker_names.centroids(diarization.embeddings, diarization.exclusive, samples,
                                       self.step.diarizer.embed_voice)


def diarizer_from_settings(settings, repository_path: str = ""):
    """Return the diarization pipeline named by the settings, or None when diarization is off.

    ``repository_path``: the endpoint's repository, whose carried checkpoints ``embedded`` prefers.
    """
    if not settings.diarization_model:
        return None
    from whisper_endpoint.core.device import resolve_device
    from whisper_endpoint.diarization import load_diarizer

    token = settings.hf_token.get_secret_value() if settings.hf_token else None
    return load_diarizer(
        settings.diarization_model,
        token=token,
        device=resolve_device(settings.device),
        cache_dir=settings.model_cache_dir,
        repository=repository_path or None,
        threads=settings.diarization_threads,
    )


def load_voices(settings, diarizer) -> Voiceprints:
    """``SPEAKERS_DIR``'s voiceprints, embedded once at start-up (a start-up error names the path)."""
    if settings.speakers_dir is None:
        return {}
    if diarizer is None:
        raise ModelLoadError(f"SPEAKERS_DIR={settings.speakers_dir} needs diarization: set DIARIZATION_MODEL "
                             "(e.g. embedded) or unset SPEAKERS_DIR")
    return voiceprints(read_speakers_dir(settings.speakers_dir), diarizer.embed_voice)


def request_voices(diarizer, config, deployment: Voiceprints, library=None, tenant: str = DEFAULT) -> Voiceprints:
    """The voiceprints this request names speakers with: the library's for ``tenant`` (``SPEAKERS_DIR``'s among
    them; without a library ``deployment``, SPEAKERS_DIR's), unless ``speaker_library: false``, and its own
    (its own win)."""
    if not config.speaker_library:
        deployment = {}
    elif library is not None:
        deployment = library.voiceprints(tenant)
    if config.known_speakers is None:
        return deployment
    diarized = config.diarize_channels if config.multichannel else config.diarize
    if diarizer is None or not diarized:
        why = ("DIARIZATION_MODEL is not set on this endpoint" if diarizer is None else
               "this request turns it off (" + ("diarize_channels is false" if config.multichannel else
                                                "diarize: false") + ")")
        raise UnsupportedOptionError(f"known_speakers needs diarization, and {why}")
    return {**deployment, **voiceprints(request_clips(config.known_speakers), diarizer.embed_voice)}


def diarization_wanted(diarizer, config, warnings: list[str]) -> bool:
    """Whether this request gets speakers; explain speaker options that cannot apply."""
    if diarizer is not None:
        return config.diarize
    asked = sorted(name for name in SPEAKER_OPTIONS if name in config.model_fields_set)
    if asked or (config.diarize and "diarize" in config.model_fields_set):
        warnings.append(
            "diarization is off on this endpoint (DIARIZATION_MODEL is not set); ignored: "
            + ", ".join(asked or ["diarize"])
        )
    return False


def label_speakers(diarizer, samples, transcript: Transcript, config, duration: float) -> Speakers:
    """Diarize ``samples`` and give ``transcript``'s words their speakers (no known speakers): the speakers'
    runs of words, and their turns and embeddings when ``config`` asks."""
    heard = Heard(samples, transcript, alongside.diarize(diarizer, samples, config), duration)
    return speakers_of(diarizer, heard, config)


def speakers_of(diarizer, heard: Heard, config) -> Speakers:
    """The speakers of ``heard``'s words and its diarization (no known speakers)."""
    return _labelled(diarizer, heard, config, {}, keep=False).speakers


def _labelled(diarizer, heard: Heard, config, voices: Voiceprints, *, keep: bool) -> Labelled:
    """Name the known speakers (``voices``) of ``heard``'s diarization and merge it with its words: the
    speakers' runs of words (and their turns, the names matched, their embeddings when asked); with
    ``keep``, each speaker's centroid under its label in the response."""
    diarization, transcript, duration = heard.diarization, heard.transcript, heard.duration
    warnings = list(diarization.warnings)  # e.g. pyannote could not reach the requested speaker count
    named, embeddings, found = None, None, {}
    turns, exclusive = diarization.turns, diarization.exclusive
    if voices or config.return_speaker_embeddings or keep:
        centroids = speaker_names.centroids(diarization.embeddings, exclusive, heard.samples, diarizer.embed_voice)
        matches = speaker_names.match(centroids, voices) if voices else []
        turns, exclusive = speaker_names.renamed(turns, matches), speaker_names.renamed(exclusive, matches)
        names = {match.speaker: match.name for match in matches}
        if keep:
            found = {names.get(label, label): vector for label, vector in centroids.items()}
        if voices:
            named = [vars(match) for match in matches]
        if config.return_speaker_embeddings:
            embeddings = {"model": diarizer.embedding_model, "speakers": {
                names.get(label, label): [round(float(x), 6) for x in vector] for label, vector in centroids.items()}}
    # The exclusive diarization (one speaker at a time) labels the words; where the regular one hears two
    # speakers at once, the overlap rules decide the words there and mark the runs (overlap.py).
    overlaps = overlap.stretches(turns)
    runs = merge_speakers(
        transcript.segments, exclusive, with_words=config.return_speaker_words, duration=duration, overlaps=overlaps
    )
    runs = overlap.marked(runs, overlaps, duration)
    untimed = sum(map(lacks_words, transcript.segments))
    if untimed:
        spoken = sum(1 for segment in transcript.segments if segment.text.strip())
        warnings.append(
            f"{untimed} of {spoken} segments came without word times: each went whole to the speaker who "
            "overlaps it most; the other segments were labelled word by word"
        )
    listed = [_turn(turn, duration) for turn in turns] if config.return_speaker_turns else None
    return Labelled(Speakers(runs, turns=listed, matches=named, embeddings=embeddings, warnings=warnings), found)


def no_speakers(config) -> Speakers:
    """What the speaker step gives when the VAD found no speech: nobody (and no turns, when asked)."""
    return Speakers(runs=[], turns=[] if config.return_speaker_turns else None)


def _turn(turn: SpeakerTurn, duration: float) -> dict:
    return {
        "start": clamped(turn.start, duration),
        "end": clamped(turn.end, duration),
        "speaker": turn.speaker,
    }
