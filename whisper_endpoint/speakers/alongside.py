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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

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
def diarizing(diarizer, samples, config, context: DecodeContext, *,
              longest_s: float = float("inf")) -> Iterator[Callable[[], object]]:
    """Start the request's diarization (``config``'s speaker counts); the block runs the ASR and calls the
    yielded function for the diarization (it waits for it). Leaving the block without calling it stops
    the diarization. Audio longer than ``longest_s`` (DIARIZATION_ALONGSIDE_S), or no core to spare,
    runs the diarization when it is asked for, after the ASR."""
    abandoned = threading.Event()

    def stop() -> None:
        if abandoned.is_set():
            raise _Abandoned
        context.check()

    run = functools.partial(diarize, diarizer, samples, config, stop=stop)
    if len(samples) > longest_s * SAMPLE_RATE or not overlaps(diarizer):
        yield run
        return
    future = _pool(max(1, cores() // diarizer.threads)).submit(run)
    try:
        yield future.result
    finally:
        abandoned.set()  # a diarization already returned is unaffected
        future.cancel()  # one still waiting for a worker never starts
