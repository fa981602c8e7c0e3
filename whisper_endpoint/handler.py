"""``EndpointHandler(path)`` loads the models once; ``handler(data)`` runs one request.

``handler.run(data, context)`` is the same with a ``DecodeContext`` (core/decode_context.py): the
server and the job worker use it for progress, deadlines and cancellation; ``handler(data)`` is what
the platforms call.

The request flow is one straight line: parse -> ASR -> (speakers) -> render; a multichannel request
splits the channels, runs the same ASR -> (speakers) once per channel and merges them
(``multichannel/``) before rendering. The repository's root ``handler.py`` (what Inference Endpoints
imports) re-exports this class.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable

from whisper_endpoint.audio.decode import TARGET_RATE
from whisper_endpoint.backends import load_asr_backend
from whisper_endpoint.core.config import ModelSettings
from whisper_endpoint.core.decode_context import DIARIZING, DecodeContext
from whisper_endpoint.core.types import ChannelResult, Speakers, Transcript
from whisper_endpoint.multichannel import channels
from whisper_endpoint.multichannel.merge import merge_channels
from whisper_endpoint.pipeline import asr_step, render
from whisper_endpoint.pipeline.request import ParsedRequest, parse_request
from whisper_endpoint.speakers import alongside
from whisper_endpoint.speakers import labels as speaker_labels

logger = logging.getLogger(__name__)


class EndpointHandler:
    """``speakers_from``: another handler whose diarizer, known voices and speaker library this one shares
    (a server with several ASR models loads the diarization once). ``open_library``: (diarizer,
    SPEAKERS_DIR's voices) -> the speaker library (voice_library/) whose voices every diarized request
    names, or None; the server and the batch command pass one, the platforms' handler keeps none."""

    def __init__(self, path: str = "", settings: ModelSettings | None = None, *,
                 speakers_from: "EndpointHandler | None" = None, open_library: Callable | None = None):
        self.settings = settings or ModelSettings()
        started = time.perf_counter()
        self.asr = load_asr_backend(self.settings, path)
        if speakers_from is not None:
            self.diarizer, self.voices = speakers_from.diarizer, speakers_from.voices
            self.library = speakers_from.library
        else:
            self.diarizer = speaker_labels.diarizer_from_settings(self.settings, path)
            self.voices = speaker_labels.load_voices(self.settings, self.diarizer)  # SPEAKERS_DIR, once
            self.library = open_library(self.diarizer, self.voices) if open_library else None
        logger.info("models loaded in %.1f s", time.perf_counter() - started)

    def with_library(self, library) -> "EndpointHandler":
        """A copy of this loaded handler that names ``library``'s voices (the models are shared, not copied)."""
        handler = copy.copy(self)
        handler.library = library
        return handler

    def __call__(self, data: dict) -> dict:
        return self.run(data)

    def run(self, data: dict, context: DecodeContext | None = None) -> dict:
        context = context or DecodeContext()
        request = parse_request(data, max_seconds=self.settings.max_audio_seconds)
        config = request.config
        voices = speaker_labels.request_voices(self.diarizer, config, self.voices, self.library)  # clips checked before ASR
        context.check()  # e.g. a deadline passed while the audio was decoded
        if config.multichannel:  # each channel on its own, one speaker per channel
            return self._channels(request, context, voices)
        diarize = speaker_labels.diarization_wanted(self.diarizer, config, request.warnings)
        transcript, speakers = self._transcribe(request.audio.samples, config, diarize=diarize, context=context,
                                                voices=voices)
        return render.response(
            transcript,
            timestamps=config.return_timestamps,
            duration=request.audio.duration,
            confidence=config.return_confidence,
            speakers=speakers,
            warnings=request.warnings,
        )

    def _channels(self, request: ParsedRequest, context: DecodeContext, voices) -> dict:
        config = request.config
        context = context.narrowed(in_order=False)  # the channels' windows one channel after another
        diarize = channels.diarize_wanted(self.diarizer, config, request.warnings)
        channel_config = channels.channel_config(config)
        results = []
        for channel in channels.split_channels(request.audio, config, request.warnings):
            if channel.samples is None:  # silent: no words, and no chance for Whisper to make some up
                results.append(ChannelResult(channel.index, channel.name, None))
                continue
            transcript, speakers = self._transcribe(channel.samples, channel_config, diarize=diarize,
                                                    context=context, voices=voices)
            results.append(ChannelResult(channel.index, channel.name, transcript, speakers))
        duration = request.audio.duration
        merged = merge_channels(results, duration=duration, with_words=config.return_speaker_words,
                                turns=config.return_speaker_turns)
        return render.channels_response(merged, timestamps=config.return_timestamps, duration=duration,
                                        confidence=config.return_confidence, warnings=request.warnings)

    def _transcribe(self, samples, config, *, diarize: bool, context: DecodeContext,
                    voices=None) -> tuple[Transcript, Speakers | None]:
        """One mono signal: the transcript, and its speakers when diarized."""
        # Speakers are given word by word; the chunks still come as the request asked.
        asr_config = config.model_copy(update={"return_timestamps": "word"}) if diarize else config
        if not diarize:
            return asr_step.transcribe_speech(self.asr, samples, asr_config, context), None
        with alongside.diarizing(self.diarizer, samples, config, context,
                                 longest_s=self.settings.diarization_alongside_s) as diarization:  # during the ASR
            transcript = asr_step.transcribe_speech(self.asr, samples, asr_config, context)
            if asr_step.found_none(transcript):  # no speech, no speakers
                return transcript, speaker_labels.no_speakers(config)
            context.stage(DIARIZING)  # the rest of the diarization; a stop reaches it at its next step
            found = diarization()
        speakers = speaker_labels.label_speakers(
            self.diarizer, samples, transcript, config, len(samples) / TARGET_RATE, voices,
            kept=context.speaker_voices, diarization=found,
        )
        context.check()
        return transcript, speakers
