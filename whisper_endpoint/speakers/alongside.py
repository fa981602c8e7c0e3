"""A request's diarization on a thread of its own while the ASR decodes the same audio.

The diarizer needs the samples, not the transcript (step.py merges the two afterwards), so both can
run at once. The ASR's decode does not fill the cores (on the 2-core machine CTranslate2 on its default
threads used about one core's CPU for the bench's 5 min), and the diarizer runs on few threads
(core/threads.py), so a diarized request then takes about the longer of the two instead of their
sum (docs/benchmarks.md, "Diarization alongside the ASR"). Where the diarizer's threads take every core
there is nothing to overlap with, and it runs after the ASR as before.

Memory: the diarizer's working set then adds to the ASR's instead of following it (+0.25-0.35 GiB at 5,
13.4 and 26.8 min at the defaults on 2 cores: 3253 MiB at 26.8 min, below the 3714 the same request
peaked at after the ASR before the encoder ran in pieces, asr/ctranslate2/encoding.py). Audio up to
DIARIZATION_ALONGSIDE_S (30 min unless set) runs alongside; longer audio keeps the old order, whose peak
is the ASR's (a long recording is decoded in blocks of 10 minutes, whisper_endpoint/blocks/, each block
alongside).

Bounded: one pool of ``cores // diarizer threads`` workers serves every request of the process, so
concurrent requests never run more diarizations at once than the cores hold (the others wait for a
worker while their ASR goes on). A request whose ASR fails, stops or finds no speech stops its
diarization at the pipeline's next step or batch instead of leaving it running; a stop asked for the
request (deadline, client gone) reaches the diarization the same way.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.threads import cores
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.diarization.base import Diarization


class _Abandoned(Exception):
    """The request no longer wants its diarization (its ASR ended without needing it)."""


def overlaps(diarizer) -> bool:
    """Whether a core is left for the ASR beside the diarizer's threads."""
    return cores() > diarizer.threads


def diarize(diarizer, samples, config, stop=None) -> Diarization:
    """The diarizer on these samples with the request's speaker counts (``stop``: Diarizer.diarize's)."""
    return diarizer.diarize(samples, num_speakers=config.num_speakers, min_speakers=config.min_speakers,
                            max_speakers=config.max_speakers, stop=stop)


@functools.cache
def _pool(workers: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="diarization")


@contextmanager
def diarizing(diarizer, samples, config, context: DecodeContext, *, longest_s: float = float("inf"),
              chain: Chain | None = None, following=None) -> Iterator[Callable[[], object]]:
    """Start the request's diarization (``config``'s speaker counts); the block runs the ASR and calls the
    yielded function for the diarization (it waits for it). Leaving the block without calling it stops
    the diarization. Audio longer than ``longest_s`` (DIARIZATION_ALONGSIDE_S), or no core to spare,
    runs the diarization when it is asked for, after the ASR. In a ``chain`` (a long recording's blocks),
    ``samples``' diarization may have started already, and ``following`` (the next block's samples, or
    None) starts as soon as this one ends."""
    if len(samples) > longest_s * SAMPLE_RATE or not overlaps(diarizer):
        yield functools.partial(diarize, diarizer, samples, config, stop=_stopper(threading.Event(), context))
        return
    started = chain.started(samples, following) if chain is not None else _Started.now(diarizer, samples, config,
                                                                                           context)
    try:
        yield started.future.result
    finally:
        started.abandon()  # a diarization already returned is unaffected


def _stopper(abandoned: threading.Event, context: DecodeContext) -> Callable[[], None]:
    def stop() -> None:
        if abandoned.is_set():
            raise _Abandoned
        context.check()

    return stop


@dataclass
class _Started:
    """A diarization submitted to the pool, and the event that stops it."""

    future: Future
    abandoned: threading.Event

    @classmethod
    def now(cls, diarizer, samples, config, context: DecodeContext) -> _Started:
        abandoned = threading.Event()
        run = functools.partial(diarize, diarizer, samples, config, stop=_stopper(abandoned, context))
        return cls(_pool(max(1, cores() // diarizer.threads)).submit(run), abandoned)

    def abandon(self) -> None:
        self.abandoned.set()
        self.future.cancel()  # one still waiting for a worker never starts


class Chain:
    """A long recording's blocks diarized one after another, each as soon as the one before it ends: the
    diarization of a block takes about half its ASR's time, and without the chain it then waited for the
    next block while one core did the ASR alone (docs/benchmarks.md, "A diarized hour, stage by stage").
    At most one block's diarization runs at a time; the next block's samples are held from the start of
    the block before it. ``close`` stops a diarization started for a block that is never reached."""

    def __init__(self, diarizer, config, context: DecodeContext):
        self.diarizer, self.config, self.context = diarizer, config, context
        self._lock = threading.Lock()
        self._next: tuple[object, _Started | None] | None = None  # (its samples, started or not yet)
        self._closed = False

    def started(self, samples, following) -> _Started:
        """``samples``' diarization (started by the block before, or now), with ``following``'s to start
        when it ends."""
        with self._lock:
            ahead = self._next
            self._next = (following, None) if following is not None else None
        started = ahead[1] if ahead is not None and ahead[0] is samples and ahead[1] is not None else None
        if started is None:
            started = _Started.now(self.diarizer, samples, self.config, self.context)
        if following is not None:
            started.future.add_done_callback(lambda done: self._start_next(following, done))
        return started

    def _start_next(self, following, done: Future) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # this block's diarization failed or was stopped: the next starts when it is reached
        with self._lock:
            if self._closed or self._next is None or self._next[0] is not following:
                return
            self._next = (following, _Started.now(self.diarizer, following, self.config, self.context))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            ahead, self._next = self._next, None
        if ahead is not None and ahead[1] is not None:
            ahead[1].abandon()
