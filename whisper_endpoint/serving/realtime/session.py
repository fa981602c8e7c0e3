"""One live transcription session: client events in, server events out.

Audio arrives in pieces and is kept at 16 kHz from the start of the open utterance (or, between
utterances, only the prefix padding). With server VAD, Silero VAD finds where speech starts and stops;
with ``turn_detection: null`` the client commits. While an utterance is open it is decoded again every
``INTERIM_STEP_S`` of new audio, and the words two decodes agree on go out as deltas; a committed
utterance is decoded whole for ``completed``. One worker per session decodes committed utterances in
order. Positions are sample counts at 16 kHz since the session started (``audio_*_ms`` in events).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from whisper_endpoint.core.errors import EndpointError
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.serving.realtime import events
from whisper_endpoint.serving.realtime.agreement import LocalAgreement
from whisper_endpoint.serving.realtime.config import SessionConfig
from whisper_endpoint.serving.realtime.pcm import PCMInput
from whisper_endpoint.serving.realtime.vad import TurnDetector, TurnEvent

logger = logging.getLogger(__name__)

INTERIM_STEP_S = 1.0  # new audio between two decodes of the open utterance
_MIN_COMMIT_S = 0.1  # OpenAI refuses to commit less than 100 ms
_TRAILING_S = 0.3  # silence kept after the speech's end: Whisper ends sentences better with some

Send = Callable[[dict], Awaitable[None]]


class Decoder:
    """How a session decodes: ``final`` waits its turn at the server's gate; ``interim`` returns
    None at once when file requests or other finals are running or waiting (it never queues).
    ``active_at``: when a decode of the session last moved (started, or finished a window)."""

    active_at = 0.0

    async def final(self, samples: np.ndarray, parameters: dict) -> tuple[str, str | None]:
        """The utterance's text and its language (None: not known)."""
        raise NotImplementedError

    async def interim(self, samples: np.ndarray, parameters: dict) -> str | None:
        raise NotImplementedError

    async def speaker(self, samples: np.ndarray) -> str | None:
        """The utterance's speaker (``speaker_labels``); None when the server cannot tell voices apart."""
        return None

    def stop(self) -> None:
        """The session ended: decodes still running stop at their next window (their slots free)."""


@dataclass(eq=False)
class Utterance:
    item_id: str
    start: int  # sample position where its audio begins (prefix padding included)
    agreement: LocalAgreement = field(default_factory=LocalAgreement)
    decoded_to: int = 0  # end position of the audio the last interim decode saw


def ms(position: int) -> int:
    return position * 1000 // SAMPLE_RATE


class RealtimeSession:
    """``max_backlog_s``: the most audio the session holds, committed and waiting for its decode or not
    yet committed; an append past it is refused (error ``audio_backlog_full``) until decodes catch up."""

    def __init__(self, send: Send, decoder: Decoder, config: SessionConfig, max_utterance_s: float,
                 max_backlog_s: float = 120.0):
        self.send, self.decoder, self.config = send, decoder, config
        self.max_utterance = int(max_utterance_s * SAMPLE_RATE)
        self.max_backlog = int(max_backlog_s * SAMPLE_RATE)
        self.backlog = 0  # samples committed and not yet answered
        self.pcm = PCMInput(config.rate, config.audio_format)
        self.detector = self._detector()
        self.audio = np.zeros(0, dtype=np.float32)
        self.offset = 0  # position of self.audio[0]
        self.utterance: Utterance | None = None
        self.previous_item: str | None = None
        self._finals: asyncio.Queue = asyncio.Queue()
        self.decoding = 0  # committed utterances not yet answered
        self.answered_at = time.monotonic()  # when the last transcript went out
        self._interim: asyncio.Task | None = None
        self._worker = asyncio.create_task(self._decode_finals())

    @property
    def active_at(self) -> float:
        """When the session's decodes last moved: a session whose decodes go on is not idle, one whose
        decode hangs (or waits in the gate) for REALTIME_IDLE_TIMEOUT_S is."""
        return max(self.answered_at, self.decoder.active_at)

    @property
    def end(self) -> int:
        return self.offset + len(self.audio)

    def _detector(self) -> TurnDetector | None:
        vad = self.config.turn_detection
        return None if vad is None else TurnDetector(vad.threshold, vad.silence_duration_ms)

    async def handle(self, event) -> None:
        if isinstance(event, (events.SessionUpdate, events.BetaSessionUpdate)):
            await self._update(event)
        elif isinstance(event, events.Append):
            samples = self.pcm.decode(event.audio, self.max_utterance / SAMPLE_RATE)
            if self.backlog + len(self.audio) + len(samples) > self.max_backlog:
                raise events.EventError(
                    f"input_audio_buffer.append: the session holds {ms(self.backlog + len(self.audio)) / 1000:g} s "
                    f"of audio not yet transcribed, the most it may (REALTIME_MAX_BACKLOG_S="
                    f"{self.max_backlog / SAMPLE_RATE:g}); this audio was dropped: wait for the transcripts",
                    "audio_backlog_full", event_id=event.event_id)
            await self._append(samples)
        elif isinstance(event, events.Commit):
            await self._client_commit(event.event_id)
        elif isinstance(event, events.Clear):
            self._clear()
            await self.send(events.server_event("input_audio_buffer.cleared"))

    async def _update(self, event) -> None:
        beta = isinstance(event, events.BetaSessionUpdate)
        update = event.session.as_input() if beta else event.session.audio.input
        old, self.config = self.config, self.config.updated(update, event.event_id)
        if (self.config.audio_format, self.config.rate) != (old.audio_format, old.rate):
            self.pcm = PCMInput(self.config.rate, self.config.audio_format)
        if self.config.turn_detection != old.turn_detection:
            self.detector = self._detector()
            if self.detector is not None:
                self.detector.position = self.end
                # An utterance the client opened by hand now ends at the next silence.
                self.detector.speaking = self.utterance is not None
        kind = "transcription_session.updated" if beta else "session.updated"
        await self.send(events.server_event(kind, session=self.config.describe(beta=beta)))

    async def _append(self, samples: np.ndarray) -> None:
        self.audio = np.concatenate([self.audio, samples])
        if self.detector is not None:
            for turn in self.detector.feed(samples):
                await self._turn(turn)
        elif self.utterance is None and len(samples):
            self.utterance = Utterance(events.new_id("item"), self.offset)
        while self.utterance is not None and self.end - self.utterance.start >= self.max_utterance:
            await self._forced_commit(self._cut())
        if self.utterance is None:
            self._keep_padding()
        else:
            self._maybe_interim()

    async def _turn(self, turn: TurnEvent) -> None:
        if turn.kind == "started" and self.utterance is None:
            padding = self.config.turn_detection.prefix_padding_ms * SAMPLE_RATE // 1000
            self.utterance = Utterance(events.new_id("item"), max(self.offset, turn.sample - padding))
            await self.send(events.server_event(
                "input_audio_buffer.speech_started", audio_start_ms=ms(self.utterance.start),
                item_id=self.utterance.item_id))
        elif turn.kind == "stopped" and self.utterance is not None:
            await self.send(events.server_event(
                "input_audio_buffer.speech_stopped", audio_end_ms=ms(turn.sample), item_id=self.utterance.item_id))
            limit = self.utterance.start + self.max_utterance
            await self._commit(min(self.end, turn.sample + int(_TRAILING_S * SAMPLE_RATE), limit))

    def _cut(self) -> int:
        """Where an utterance at the length limit is cut: its quietest frame in the last 40 %."""
        limit = self.utterance.start + self.max_utterance
        if self.detector is None:
            return limit
        return self.detector.quietest(limit - int(0.4 * self.max_utterance), limit)

    async def _forced_commit(self, end: int) -> None:
        """The utterance reached REALTIME_MAX_UTTERANCE_S: commit it; speech that goes on opens the next."""
        speaking = self.detector is not None and self.detector.speaking
        if speaking:
            await self.send(events.server_event(
                "input_audio_buffer.speech_stopped", audio_end_ms=ms(end), item_id=self.utterance.item_id))
        await self._commit(end)
        if speaking or self.detector is None and self.end > end:
            self.utterance = Utterance(events.new_id("item"), end)
        if speaking:
            await self.send(events.server_event(
                "input_audio_buffer.speech_started", audio_start_ms=ms(end), item_id=self.utterance.item_id))

    async def _client_commit(self, event_id: str | None) -> None:
        start = self.utterance.start if self.utterance is not None else self.offset
        if self.end - start < _MIN_COMMIT_S * SAMPLE_RATE:
            raise events.EventError(
                f"input_audio_buffer.commit: the buffer holds {ms(self.end - start)} ms of audio; at least "
                f"{int(_MIN_COMMIT_S * 1000)} ms are needed", "input_audio_buffer_commit_empty", event_id=event_id)
        if self.utterance is None:
            self.utterance = Utterance(events.new_id("item"), start)
        if self.detector is not None:
            self.detector.reset()
        await self._commit(self.end)

    async def _commit(self, end: int) -> None:
        utterance, self.utterance = self.utterance, None
        samples = self.audio[utterance.start - self.offset : end - self.offset]
        await self.send(events.server_event(
            "input_audio_buffer.committed", previous_item_id=self.previous_item, item_id=utterance.item_id,
            audio_start_ms=ms(utterance.start), audio_end_ms=ms(end)))
        self.previous_item = utterance.item_id
        self.audio, self.offset = self.audio[end - self.offset :], end
        self.decoding += 1
        self.backlog += len(samples)
        self._finals.put_nowait((utterance, samples, self.config.decode_parameters()))

    def _clear(self) -> None:
        self.audio, self.offset, self.utterance = np.zeros(0, dtype=np.float32), self.end, None
        if self.detector is not None:
            self.detector.reset()

    def _keep_padding(self) -> None:
        vad = self.config.turn_detection
        keep = (vad.prefix_padding_ms if vad else 0) * SAMPLE_RATE // 1000
        if self.detector is not None and len(self.audio) > keep:
            self.offset, self.audio = self.end - keep, self.audio[len(self.audio) - keep :]

    def _maybe_interim(self) -> None:
        utterance, step = self.utterance, int(INTERIM_STEP_S * SAMPLE_RATE)
        busy = self._interim is not None and not self._interim.done()
        # Not in a pause: the turn may end in a moment, and its final decode should not wait for this one.
        pausing = self.detector is not None and self.detector.pausing
        if busy or pausing or not self._finals.empty() or self.end - max(utterance.start, utterance.decoded_to) < step:
            return
        utterance.decoded_to = self.end
        samples = self.audio[utterance.start - self.offset :].copy()
        self._interim = asyncio.create_task(self._decode_interim(utterance, samples))

    async def _decode_interim(self, utterance: Utterance, samples: np.ndarray) -> None:
        try:
            text = await self.decoder.interim(samples, self.config.decode_parameters())
        except EndpointError:
            return  # the final decode reports what went wrong
        if text is None or utterance is not self.utterance:
            return  # skipped (the server was busy), or the utterance was committed or cleared meanwhile
        delta = utterance.agreement.update(text)
        if delta:
            await self._delta(utterance.item_id, delta)

    async def _delta(self, item_id: str, delta: str) -> None:
        await self.send(events.server_event(
            "conversation.item.input_audio_transcription.delta", item_id=item_id, content_index=0, delta=delta))

    async def _decode_finals(self) -> None:
        while True:
            utterance, samples, parameters = await self._finals.get()
            try:
                await self._answer(utterance, samples, parameters)
            finally:
                self.decoding -= 1
                self.backlog -= len(samples)
                self.answered_at = time.monotonic()

    async def _answer(self, utterance: Utterance, samples: np.ndarray, parameters: dict) -> None:
        # The voice is embedded while the words are decoded: the label costs completed little time.
        speaker = (asyncio.ensure_future(self.decoder.speaker(samples))
                   if self.config.transcription.speaker_labels else None)
        try:
            text, language = await self.decoder.final(samples, parameters)
            text = " ".join(text.split())
        except EndpointError as exc:
            if speaker is not None:
                speaker.cancel()
            await self.send(events.server_event(
                "conversation.item.input_audio_transcription.failed", item_id=utterance.item_id,
                content_index=0, error={"type": "transcription_error", "code": exc.code, "message": exc.message}))
            return
        tail = utterance.agreement.finish(text)
        if tail:
            await self._delta(utterance.item_id, tail)
        await self.send(events.server_event(
            "conversation.item.input_audio_transcription.completed", item_id=utterance.item_id,
            content_index=0, transcript=text, **({"language": language} if language else {}),
            **({"speaker": await speaker} if speaker is not None else {})))

    async def close(self) -> None:
        for task in (self._worker, self._interim):
            if task is not None:
                task.cancel()
        self.decoder.stop()
