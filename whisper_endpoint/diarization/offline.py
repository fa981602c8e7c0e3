"""The embedded pipeline under the class path users' ``config.yaml`` files name
(``whisper_endpoint.diarization.offline.OfflineSpeakerDiarization``); it lives in ``embedded/``."""

from whisper_endpoint.diarization.embedded.pipeline import OfflineSpeakerDiarization

__all__ = ["OfflineSpeakerDiarization"]
