"""``EndpointHandler(path)`` loads the models once; ``handler(data)`` runs one request.

``handler.run(data, context)`` is the same with a ``DecodeContext`` (decode_context.py): the server
and the job worker use it for progress, deadlines and cancellation; ``handler(data)`` is what the
platforms call.

The request flow is one straight line: parse -> transcribe -> (diarize) -> render; a multichannel
request runs the same transcribe -> (diarize) once per channel (``channels.py``). The repository's
root ``handler.py`` (what Inference Endpoints imports) re-exports this class.
"""

from __future__ import annotations

import logging
import time
from functools import partial

from whisper_endpoint import channels, nonspeech, render, speaker_labels
from whisper_endpoint.audio import TARGET_RATE
from whisper_endpoint.backends import load_asr_backend
from whisper_endpoint.config import ModelSettings
from whisper_endpoint.decode_context import DIARIZING, DecodeContext
from whisper_endpoint.request import parse_request
from whisper_endpoint.results import Transcript

logger = logging.getLogger(__name__)


class EndpointHandler:
    """``speakers_from``: another handler whose diarizer and known voices this one shares (a server with
    several ASR models loads the diarization once)."""

    def __init__(self, path: str = "", settings: ModelSettings | None = None, *,
                 speakers_from: "EndpointHandler | None" = None):
        self.settings = settings or ModelSettings()
        started = time.perf_counter()
        self.asr = load_asr_backend(self.settings, path)
        self.library = getattr(speakers_from, "library", None)  # the speaker library (voice_library/), when served
        if speakers_from is not None:
            self.diarizer, self.voices = speakers_from.diarizer, speakers_from.voices
        else:
            self.diarizer = speaker_labels.load_diarizer(self.settings, path)
            self.voices = speaker_labels.load_voices(self.settings, self.diarizer)  # SPEAKERS_DIR, once
        logger.info("models loaded in %.1f s", time.perf_counter() - started)

    def __call__(self, data: dict) -> dict:
        return self.run(data)

    def run(self, data: dict, context: DecodeContext | None = None) -> dict:
        context = context or DecodeContext()
        request = parse_request(data, max_seconds=self.settings.max_audio_seconds)
        config = request.config
        voices = speaker_labels.request_voices(self.diarizer, config, self.voices, self.library)  # clips checked before ASR
        context.check()  # e.g. a deadline passed while the audio was decoded
        transcribe = partial(self._transcribe, context=context, voices=voices)
        if config.multichannel:  # each channel on its own, one speaker per channel
            context.in_order = False  # the channels' windows one channel after another, not in time order
            diarize = channels.diarize_wanted(self.diarizer, config, request.warnings)
            return channels.respond(request.audio, config, request.warnings, partial(transcribe, diarize=diarize))
        diarize = speaker_labels.wanted(self.diarizer, config, request.warnings)
        transcript, extra = transcribe(request.audio.samples, config, request.warnings, diarize=diarize)
        return render.response(
            transcript,
            timestamps=config.return_timestamps,
            duration=request.audio.duration,
            confidence=config.return_confidence,
            warnings=request.warnings,
            **extra,
        )

    def _transcribe(self, samples, config, warnings: list[str], *, diarize: bool,
                    context: DecodeContext, voices=None) -> tuple[Transcript, dict]:
        """One mono signal: the transcript, and its ``speakers`` (and ``speaker_turns``) when diarized."""
        # Speakers are given word by word; the chunks still come as the request asked.
        asr_config = config.model_copy(update={"return_timestamps": "word"}) if diarize else config
        transcript = nonspeech.transcribe(self.asr, samples, asr_config, context)
        if not diarize:
            return transcript, {}
        if nonspeech.found_none(transcript):  # no speech, no speakers
            return transcript, {"speakers": [], **({"speaker_turns": []} if config.return_speaker_turns else {})}
        context.stage(DIARIZING)  # diarization runs whole: a stop asked meanwhile is seen after it
        duration = len(samples) / TARGET_RATE
        extra = speaker_labels.label_speakers(
            self.diarizer, samples, transcript, config, duration, warnings, voices,
            kept=getattr(context, "speaker_voices", None),  # a job's: its voices kept with its result
        )
        context.check()
        return transcript, extra
