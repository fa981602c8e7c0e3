"""Decoded samples kept in a temporary file instead of memory: a long recording is decoded once, then
read a block at a time (``whisper_endpoint/blocks/``), so its length costs disk, not memory.

Reads go through ``os.preadv`` into a fresh array: no page of the file is mapped into the process, so
what was read once does not stay resident. The file has no name (``tempfile.TemporaryFile``): it goes
when it is closed or collected, also when the process dies.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

_ITEM = np.dtype(np.float32).itemsize


class SpooledSamples:
    """Mono float32 samples on disk: ``append`` while decoding, then ``len``, ``shape`` and slices
    (``spooled[a:b]``, a new array) as for the array it stands for."""

    ndim = 1
    dtype = np.dtype(np.float32)

    def __init__(self, folder: str | None = None):
        self._file = tempfile.TemporaryFile(dir=folder)
        self._length = 0

    def append(self, chunk: np.ndarray) -> None:
        self._file.write(np.ascontiguousarray(chunk, dtype=np.float32).tobytes())
        self._length += len(chunk)

    def __len__(self) -> int:
        return self._length

    @property
    def shape(self) -> tuple[int]:
        return (self._length,)

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice):
            raise TypeError("spooled samples are read by slices: samples[start:stop]")
        start, stop, step = key.indices(self._length)
        if step != 1:
            raise ValueError("spooled samples are read in steps of 1")
        out = np.empty(max(0, stop - start), dtype=np.float32)
        if len(out):
            self._file.flush()
            read = os.preadv(self._file.fileno(), [memoryview(out).cast("B")], start * _ITEM)
            if read != out.nbytes:
                raise OSError(f"spooled samples: read {read} of {out.nbytes} bytes")
        return out

    def close(self) -> None:
        self._file.close()
