"""Diarization's place in the request flow: load the configured pipeline, run it, attach speakers.

Diarization is off unless ``DIARIZATION_MODEL`` is set, as in the reference handler. The pyannote
backends and the word-level merge of ASR words with speaker turns are tracked in the diarization
issue; until they land, setting ``DIARIZATION_MODEL`` fails at start-up with a clear message rather
than returning unlabelled results that look diarized.
"""

from __future__ import annotations

from whisper_endpoint.errors import ModelLoadError


def load_diarizer(settings):
    """Return the diarization pipeline named by the settings, or None when diarization is off."""
    if not settings.diarization_model:
        return None
    raise ModelLoadError(
        f"DIARIZATION_MODEL={settings.diarization_model!r} is set, but this version has no "
        "diarization backend yet; unset DIARIZATION_MODEL to run ASR only"
    )

