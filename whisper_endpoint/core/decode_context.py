"""A request's decode context: progress out of the decode, a deadline and a stop signal into it.

The handler's caller (the server, the job worker) makes one ``DecodeContext`` per request and passes
it down (``EndpointHandler.run(data, context)`` -> ``backend.transcribe(samples, options, context)``).
The backends call ``report`` after each decoded window or batch of windows; ``report`` tells the
listeners (job progress, server-sent events) and then stops the decode, by raising
``DecodeStopped``, when the context was cancelled (client gone, server shutting down) or its
deadline has passed. So a decode stops at its next window, never in the middle of one.

``Progress.segments`` are the transcript's segments decoded so far, final and in time order: each
report only adds segments after the ones already reported (ctranslate2 decodes long audio one batch
of windows at a time, each batch's remainder pass before the next batch). Listeners run on the
decoding thread: they must be quick and must not block (hand the work to another thread or loop).

A long recording decoded in blocks (``whisper_endpoint/blocks/``) decodes each block with the context
``in_block`` gives: its reports count the windows and segments of the blocks before it, so the listeners
see one decode of the whole recording, and ``Progress.blocks_done`` counts the blocks finished.
``checkpoints``, when the caller keeps them (a job), is where each finished block's result is kept, so
that a decode started again skips the blocks it finished before.

A context is used by one request at a time; ``cancel`` may be called from any thread. Its ``request_id``
names the request in log lines (a job's id for a job; else made here).
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from whisper_endpoint.core.tenants import DEFAULT

# Stages a decode goes through (``Progress.stage``).
DECODING, DIARIZING = "decoding", "diarizing"
# Why a decode stopped (``DecodeStopped.reason``).
DEADLINE, DISCONNECTED, SHUTDOWN = "deadline", "disconnected", "shutdown"


@dataclass(frozen=True)
class Progress:
    stage: str
    windows_done: int
    windows_total: int
    segments: tuple = ()  # results.Segment, decoded so far (empty when the decode cannot give them in order)
    blocks_done: int = 0  # a recording decoded in blocks: those finished (blocks_total 0: not in blocks)
    blocks_total: int = 0

    def public(self) -> dict:
        """What a client is shown (GET /jobs/{id})."""
        shown = {"stage": self.stage, "windows_done": self.windows_done, "windows_total": self.windows_total}
        if self.blocks_total:
            shown |= {"blocks_done": self.blocks_done, "blocks_total": self.blocks_total}
        return shown


class Checkpoints(Protocol):
    """Where a decode in blocks keeps each finished block (a job's: its store). ``key`` names what decides
    the block's result (its samples, the request, the models: blocks/saved.py), so a result saved for other
    work is never taken."""

    def load(self, index: int, key: str) -> dict | None: ...
    def save(self, index: int, key: str, body: dict) -> None: ...


@dataclass(frozen=True)
class Block:
    """Where one block sits in the recording: its index among ``count``, its start, what came before it."""

    index: int
    count: int
    start_s: float
    windows_before: int = 0  # the windows the blocks before it decoded
    windows_after: int = 0  # an estimate of those the blocks after it will decode
    segments_before: tuple = ()


class DecodeStopped(Exception):
    """The decode was stopped before its end: ``reason`` is DEADLINE, DISCONNECTED or SHUTDOWN."""

    def __init__(self, reason: str, progress: Progress, timeout_s: float | None = None, timeout_setting: str = ""):
        super().__init__(f"decode stopped ({reason}) after {progress.windows_done} of {progress.windows_total} windows")
        self.reason = reason
        self.progress = progress
        self.timeout_s, self.timeout_setting = timeout_s, timeout_setting  # the deadline's, for its message


Listener = Callable[[Progress], None]


@dataclass
class _Shared:
    """What every view of one request's context shares (``DecodeContext.narrowed``)."""

    progress: Progress
    listeners: list[Listener]
    deadline: float | None  # time.monotonic() at which the decode stops (None: no deadline)
    reason: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class DecodeContext:
    """``timeout_s``: the decode stops at its next window once that many seconds have passed since the
    context was made (None or 0: no deadline); ``timeout_setting`` names where it comes from, for the
    error's message. ``listeners`` get every ``Progress``.

    ``in_order``: False when the windows reported are not in time order (multichannel): the listeners then
    get no segments. ``keep``: what the listeners may see of the segments decoded so far, the response's
    own filter (the words over non-speech that pipeline/asr_step.py drops), so that streamed text is never
    text the response drops. A step of the request that needs either asks for a ``narrowed`` view.
    ``keep_voices``: the caller keeps the voices the request's speakers were found with (a job, so that a
    speaker can be enrolled from its result): the handler returns them beside its response."""

    def __init__(self, *, timeout_s: float | None = None, timeout_setting: str = "",
                 listeners: tuple[Listener, ...] = (), in_order: bool = True,
                 keep: Callable[[tuple], tuple] | None = None, keep_voices: bool = False,
                 checkpoints: Checkpoints | None = None, request_id: str | None = None, tenant: str = DEFAULT):
        self.started = time.monotonic()
        self.request_id = request_id or uuid.uuid4().hex[:12]
        self.tenant = tenant  # whose library voices name the speakers (core/tenants.py)
        self.keep_voices = keep_voices
        self.checkpoints = checkpoints
        self.block: Block | None = None
        self.timeout_s, self.timeout_setting = timeout_s, timeout_setting
        self.in_order, self.keep = in_order, keep
        self._shared = _Shared(Progress(DECODING, 0, 0), list(listeners),
                               self.started + timeout_s if timeout_s else None)

    def narrowed(self, *, in_order: bool | None = None, keep: Callable[[tuple], tuple] | None = None) -> DecodeContext:
        """The same request's context (listeners, deadline, stop signal, progress) for one step, whose
        reports are not in time order (``in_order=False``) or whose segments the listeners see filtered."""
        view = copy.copy(self)  # shares ``_shared``
        view.in_order = self.in_order if in_order is None else in_order
        view.keep = keep if keep is not None else self.keep
        return view

    def in_block(self, block: Block) -> DecodeContext:
        """The context one block of a long recording is decoded with: its reports placed in the whole."""
        view = copy.copy(self)
        view.block = block
        return view

    @property
    def progress(self) -> Progress:
        return self._shared.progress

    @property
    def deadline(self) -> float | None:
        return self._shared.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self._shared.deadline = value

    def listen(self, listener: Listener) -> None:
        self._shared.listeners.append(listener)

    def cancel(self, reason: str) -> None:
        """Stop the decode at its next window (the first reason given is kept)."""
        with self._shared.lock:
            self._shared.reason = self._shared.reason or reason

    @property
    def stop_reason(self) -> str | None:
        """Why the decode must stop now, or None."""
        if self._shared.reason is not None:
            return self._shared.reason
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return DEADLINE
        return None

    def shown_progress(self) -> dict:
        """What a client is shown of the progress (``Progress.public``) and, once audio is decoded, how far
        into it (``audio_s_done``: the end of the last segment) and how fast since the request started
        (``audio_minutes_per_minute``: the speed a long request goes at, its time left at a glance)."""
        shown = self.progress.public()
        done = max((segment.end for segment in self.progress.segments), default=0.0)
        elapsed = time.monotonic() - self.started
        if done > 0 and elapsed > 0:
            shown |= {"audio_s_done": round(done, 1), "audio_minutes_per_minute": round(done / elapsed, 2)}
        return shown

    def remaining_s(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self) -> None:
        reason = self.stop_reason
        if reason is not None:
            raise self.stopped(reason)

    def stopped(self, reason: str) -> DecodeStopped:
        return DecodeStopped(reason, self.progress, self.timeout_s, self.timeout_setting)

    def report(self, done: int, total: int, segments=None, *, stage: str = DECODING) -> None:
        """After a window (or a batch of windows): tell the listeners, then stop here if asked to.
        ``segments``: all the segments decoded so far (None: the last report's)."""
        block = self.block
        if segments is None or not self.in_order:
            segments = self.progress.segments if self.in_order else ()
        else:
            segments = self.keep(tuple(segments)) if self.keep is not None else tuple(segments)
            if block is not None:  # placed in the whole recording, after the blocks before
                segments = block.segments_before + tuple(segment.later(block.start_s) for segment in segments)
        if block is None:
            self._notify(Progress(stage, done, max(done, total), tuple(segments)))
        else:  # the windows of the whole recording
            done += block.windows_before
            total = max(done, total + block.windows_before) + block.windows_after
            self._notify(Progress(stage, done, total, tuple(segments), block.index, block.count))
        self.check()

    def stage(self, stage: str) -> None:
        """A new stage (diarizing) over the windows decoded: tell the listeners, stop here if asked to."""
        self._notify(replace(self.progress, stage=stage))
        self.check()

    def _notify(self, progress: Progress) -> None:
        self._shared.progress = progress
        for listener in self._shared.listeners:
            listener(progress)

