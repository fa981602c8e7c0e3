"""``EndpointHandler(path)`` loads the models once; ``handler(data)`` runs one request.

The request flow is one straight line: parse -> transcribe -> (diarize) -> render. The repository's
root ``handler.py`` (what Inference Endpoints imports) re-exports this class.
"""

from __future__ import annotations

import logging
import time

from whisper_endpoint import render, speaker_labels
from whisper_endpoint.backends import load_asr_backend
from whisper_endpoint.config import ModelSettings
from whisper_endpoint.request import parse_request

logger = logging.getLogger(__name__)


class EndpointHandler:
    def __init__(self, path: str = "", settings: ModelSettings | None = None):
        self.settings = settings or ModelSettings()
        started = time.perf_counter()
        self.asr = load_asr_backend(self.settings, path)
        self.diarizer = speaker_labels.load_diarizer(self.settings)
        logger.info("models loaded in %.1f s", time.perf_counter() - started)

    def __call__(self, data: dict) -> dict:
        request = parse_request(data, max_seconds=self.settings.max_audio_seconds)
        config = request.config
        diarize = speaker_labels.wanted(self.diarizer, config, request.warnings)
        # Speakers are given word by word; the chunks still come as the request asked.
        asr_config = config.model_copy(update={"return_timestamps": "word"}) if diarize else config
        transcript = self.asr.transcribe(request.audio.samples, asr_config)
        extra = {}
        if diarize:
            extra = speaker_labels.label_speakers(
                self.diarizer, request.audio.samples, transcript, config, request.audio.duration,
                request.warnings,
            )
        return render.response(
            transcript,
            timestamps=config.return_timestamps,
            duration=request.audio.duration,
            warnings=request.warnings,
            **extra,
        )
