"""Inference Endpoints entry point: ``EndpointHandler(path)`` loads once, ``handler(data)`` per request.

The request flow is one straight line: parse -> transcribe -> (diarize) -> render.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import diarization_utils
from config import ModelSettings
from whisper_endpoint import render
from whisper_endpoint.backends import DecodeOptions, load_asr_backend
from whisper_endpoint.request import parse_request

logger = logging.getLogger(__name__)


class EndpointHandler:
    def __init__(self, path: str = "", settings: ModelSettings | None = None):
        self.settings = settings or ModelSettings()
        started = time.perf_counter()
        self.asr = load_asr_backend(self.settings, path)
        self.diarizer = diarization_utils.load_diarizer(self.settings, path)
        logger.info("models loaded in %.1f s", time.perf_counter() - started)

    def __call__(self, data: dict) -> dict:
        request = parse_request(data, max_seconds=self.settings.max_audio_seconds)
        options = DecodeOptions.from_config(request.config)
        diarize = diarization_utils.wanted(self.diarizer, request.config, request.warnings)
        # Speakers are given word by word; the chunks still come as the request asked.
        transcript = self.asr.transcribe(request.audio.samples, replace(options, timestamps="word") if diarize else options)
        extra = {}
        if diarize:
            extra = diarization_utils.label_speakers(
                self.diarizer, request.audio.samples, transcript, request.config, request.audio.duration,
                request.warnings,
            )
        return render.response(
            transcript,
            timestamps=options.timestamps,
            duration=request.audio.duration,
            warnings=request.warnings,
            **extra,
        )
