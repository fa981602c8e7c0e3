"""The torch threads one diarization runs on, and running it at that count.

pyannote's models run long chains of small ops (the segmentation LSTM's steps, CAM++'s convolutions on a
tile). torch's OpenMP threads meet at a barrier after each op and the waiting ones spin; where the cores
are shared (the request's own ASR, other requests, other processes) a spinning thread holds the core the
working one needs, and torch's default of every core cost many times one thread's time
(docs/benchmarks.md, "Diarization threads"). So a diarization gets one thread up to 4 cores; beyond,
a quarter of the cores (at most 4), where the larger convolutions still split well (reasoned, not
measured: no such machine here).

The budget is the process's, not the diarizer's alone: the language rule's voices (CAM++ over spans)
and the diarization alongside the ASR count by it too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

MAX_DEFAULT = 4


def cores() -> int:
    """The cores this process may run on (a taskset or cpuset counts, not the host's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def default_threads(available: int) -> int:
    return 1 if available <= 4 else min(MAX_DEFAULT, available // 4)


def diarization_threads(setting: int = 0) -> int:
    """``DIARIZATION_THREADS``: 0 picks by the cores (``default_threads``)."""
    return setting if setting > 0 else default_threads(cores())


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with torch's intra-op threads at ``count``, restored afterwards. With torch's
    OpenMP backend the count is the calling thread's own (an OpenMP setting per thread), so a
    request's diarization does not change the threads another request thread decodes with."""
    import torch

    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
