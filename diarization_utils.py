"""Diarization's place in the request flow, kept importable from the repository root as in the
reference handler. Defined in whisper_endpoint/speakers/step.py.
"""

from whisper_endpoint.speakers.step import SPEAKER_OPTIONS, label_speakers
from whisper_endpoint.speakers.step import diarization_wanted as wanted  # the names users import
from whisper_endpoint.speakers.step import diarizer_from_settings as load_diarizer

__all__ = ["SPEAKER_OPTIONS", "label_speakers", "load_diarizer", "wanted"]
