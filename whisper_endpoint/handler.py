"""``EndpointHandler(path)`` loads the models once; ``handler(data)`` runs one request.

``handler.run(data, context)`` is the same with a ``DecodeContext`` (core/decode_context.py): the
server uses it for progress, deadlines and cancellation; ``handler(data)`` is what the platforms call.
Both return the JSON response (a dict). ``handler.answer(data, context)`` returns it with the voices the
request's speakers were found with, when the context keeps them (a job's, to enrol from later).

The request flow is one straight line: parse -> speaker step (what the request asks of the speakers)
-> ASR step, with the diarization alongside it -> the speakers of the words -> render, the two steps run
together by pipeline/transcribe.py; a multichannel request splits the channels, runs the same steps once
per channel and merges them (``multichannel/``) before rendering; a long recording runs the same steps
once per block and links the blocks' speakers (``blocks/``). The repository's root ``handler.py`` (what
Inference Endpoints imports) re-exports this class.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field
from collections.abc import Callable

from whisper_endpoint.asr import load_asr_backend
from whisper_endpoint.audio.spool import SpooledSamples
from whisper_endpoint.blocks import plan, runner
from whisper_endpoint.core import heap
from whisper_endpoint.core.config import ModelSettings
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.threads import diarization_threads
from whisper_endpoint.core.types import ChannelResult
from whisper_endpoint.multichannel import channels
from whisper_endpoint.multichannel.merge import merge_channels
from whisper_endpoint.pipeline import render
from whisper_endpoint.pipeline.request import ParsedRequest, parse_request
from whisper_endpoint.pipeline.span_voices import SpanVoices
from whisper_endpoint.pipeline.transcribe import AsrWithSpeakers
from whisper_endpoint.speakers.step import SpeakerStep

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    """The JSON response, and the voices the request's speakers were found with (label in the response ->
    centroid), when its context keeps them (``DecodeContext.keep_voices``: a job, whose speakers can be
    enrolled later; else empty)."""

    body: dict
    voices: dict = field(default_factory=dict)


class EndpointHandler:
    """``speakers_from``: another handler whose speaker step (diarizer, known voices, speaker library) this
    one shares (a server with several ASR models loads the diarization once). ``open_library``: (diarizer,
    SPEAKERS_DIR's voices) -> the speaker library (speakers/library/) whose voices every diarized request
    names, or None; the server and the batch command pass one, the platforms' handler keeps none."""

    def __init__(self, path: str = "", settings: ModelSettings | None = None, *,
                 speakers_from: "EndpointHandler | None" = None, open_library: Callable | None = None):
        self.settings = settings or ModelSettings()
        started = time.perf_counter()
        voices = SpanVoices(diarization_threads(self.settings.diarization_threads))  # the language rule's
        self.asr = load_asr_backend(self.settings, path, voices=voices)
        shared = speakers_from.speakers if speakers_from is not None else None
        self.speakers = SpeakerStep(self.settings, path, shared=shared, open_library=open_library)
        heap.set_aside_loaded()  # each request's gc.collect() need not walk the models' objects
        logger.info("models loaded in %.1f s", time.perf_counter() - started)

    @property
    def diarizer(self):
        """The speaker step's diarizer (None: diarization is off)."""
        return self.speakers.diarizer

    def with_library(self, library) -> "EndpointHandler":
        """A copy of this loaded handler that names ``library``'s voices (the models are shared, not copied)."""
        handler = copy.copy(self)
        handler.speakers = self.speakers.with_library(library)
        return handler

    def __call__(self, data: dict) -> dict:
        return self.run(data)

    def run(self, data: dict, context: DecodeContext | None = None) -> dict:
        return self.answer(data, context).body

    def answer(self, data: dict, context: DecodeContext | None = None) -> Answer:
        context = context or DecodeContext()
        request = parse_request(data, max_seconds=self.settings.max_audio_seconds,
                                spool_over_s=plan.spool_over_s(self.settings.block_seconds))
        try:
            return self._run(request, context)
        finally:
            if isinstance(request.audio.samples, SpooledSamples):
                request.audio.samples.close()

    def _run(self, request: ParsedRequest, context: DecodeContext) -> Answer:
        config = request.config
        speakers = self.speakers.request(config, request.warnings, context.tenant,  # clips checked before the ASR
                                         keep_voices=context.keep_voices)
        context.check()  # e.g. a deadline passed while the audio was decoded
        steps = AsrWithSpeakers(self.asr, speakers)
        if config.multichannel:  # each channel on its own, one speaker per channel
            return self._channels(request, context, steps)
        samples = request.audio.samples
        spans = plan.blocks(samples, self.settings.block_seconds)
        if len(spans) > 1:
            found = runner.transcribe(steps, samples, config, context, spans)
        else:  # one block: decoded whole (in memory, also when its decoded length just passed the spool's)
            samples = samples[:] if isinstance(samples, SpooledSamples) else samples
            found = steps.transcribe(samples, config, context)
        return Answer(render.response(
            found.transcript,
            timestamps=config.return_timestamps,
            duration=request.audio.duration,
            confidence=config.return_confidence,
            speakers=found.speakers,
            warnings=request.warnings,
        ), found.voices)

    def _channels(self, request: ParsedRequest, context: DecodeContext, steps: AsrWithSpeakers) -> Answer:
        config = request.config
        context = context.narrowed(in_order=False)  # the channels' windows one channel after another
        channel_config = channels.channel_config(config)
        results, voices = [], {}
        for channel in channels.split_channels(request.audio, config, request.warnings):
            if channel.samples is None:  # silent: no words, and no chance for Whisper to make some up
                results.append(ChannelResult(channel.index, channel.name, None))
                continue
            found = steps.transcribe(channel.samples, channel_config, context)
            voices.update(found.voices)  # under each channel's own labels: a later channel's SPEAKER_00 wins
            results.append(ChannelResult(channel.index, channel.name, found.transcript, found.speakers))
        duration = request.audio.duration
        merged = merge_channels(results, duration=duration, with_words=config.return_speaker_words,
                                turns=config.return_speaker_turns)
        return Answer(render.channels_response(merged, timestamps=config.return_timestamps, duration=duration,
                                                 confidence=config.return_confidence, warnings=request.warnings),
                        voices)
