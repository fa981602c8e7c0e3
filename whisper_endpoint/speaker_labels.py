"""Diarization's place in the request flow: load the configured pipeline, run it, label the words.

Diarization is off unless ``DIARIZATION_MODEL`` is set, as in the reference handler: ``embedded``
(no account, no network), a Hub pipeline id (with ``HF_TOKEN``) or a local directory / config.yaml
(``whisper_endpoint/diarization/``). When it is on, the ASR runs with word timestamps and every word
gets the speaker whose turn covers it most (``whisper_endpoint/speaker_merge.py``); ``speakers`` in
the response is the list of consecutive runs of one speaker.
"""

from __future__ import annotations

import logging

from whisper_endpoint.results import SpeakerTurn, Transcript
from whisper_endpoint.speaker_merge import merge_speakers

logger = logging.getLogger(__name__)

SPEAKER_OPTIONS = ("num_speakers", "min_speakers", "max_speakers", "return_speaker_turns", "return_speaker_words")


def load_diarizer(settings, repository_path: str = ""):
    """Return the diarization pipeline named by the settings, or None when diarization is off.

    ``repository_path``: the endpoint's repository, whose carried checkpoints ``embedded`` prefers.
    """
    if not settings.diarization_model:
        return None
    from whisper_endpoint.device import resolve_device
    from whisper_endpoint.diarization import load_diarizer as load_backend

    token = settings.hf_token.get_secret_value() if settings.hf_token else None
    return load_backend(
        settings.diarization_model,
        token=token,
        device=resolve_device(settings.device),
        cache_dir=settings.model_cache_dir,
        repository=repository_path or None,
    )


def wanted(diarizer, config, warnings: list[str]) -> bool:
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


def label_speakers(diarizer, samples, transcript: Transcript, config, duration: float, warnings: list[str]) -> dict:
    """Diarize the audio and merge: the response's ``speakers`` (and ``speaker_turns`` when asked)."""
    diarization = diarizer.diarize(
        samples,
        num_speakers=config.num_speakers,
        min_speakers=config.min_speakers,
        max_speakers=config.max_speakers,
    )
    warnings.extend(diarization.warnings)  # e.g. pyannote could not reach the requested speaker count
    # The exclusive diarization (one speaker at a time) suits word labels; overlaps would need two.
    speakers = merge_speakers(
        transcript.segments, diarization.exclusive, with_words=config.return_speaker_words, duration=duration
    )
    extra = {"speakers": speakers}
    if config.return_speaker_turns:
        extra["speaker_turns"] = [_turn(turn, duration) for turn in diarization.turns]
    return extra


def _turn(turn: SpeakerTurn, duration: float) -> dict:
    return {
        "start": round(min(turn.start, duration), 3),
        "end": round(min(turn.end, duration), 3),
        "speaker": turn.speaker,
    }
