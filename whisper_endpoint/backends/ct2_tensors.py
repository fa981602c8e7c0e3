"""A CTranslate2 ``model.bin``'s tensors by name, read with numpy (no ctranslate2, no torch).

The layout is the one weights/convert.py documents (binary version 6). The file is memory-mapped: a
tensor costs memory only once it is read, and reading one returns float32, quantization undone.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

# model.bin dtype ids in ctranslate2's DataType order; bfloat16 (5) has no numpy type.
_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16)


class ModelBin:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        self._where: dict[str, tuple[int, tuple[int, ...], np.dtype]] = {}
        self._index()

    def _index(self) -> None:
        data, pos = self._map, 0

        def take(fmt: str):
            nonlocal pos
            values = struct.unpack_from("<" + fmt, data, pos)
            pos += struct.calcsize("<" + fmt)
            return values[0] if len(values) == 1 else values

        def string() -> str:
            size = take("H")
            text = bytes(data[pos: pos + size - 1]).decode("utf-8")
            take(f"{size}x")
            return text

        version = take("I")
        if version != 6 or string() != "WhisperSpec":
            raise ValueError(f"{self.path}: not a version 6 WhisperSpec model.bin")
        take("I")  # spec revision
        for _ in range(take("I")):
            name, rank = string(), take("B")
            shape = tuple(take("I") for _ in range(rank))
            dtype_id, size = take("B"), take("I")
            if dtype_id < len(_DTYPES):  # anything else is never read here
                self._where[name] = (pos, shape, np.dtype(_DTYPES[dtype_id]))
            pos += size
        for _ in range(take("I")):
            alias, target = string(), string()
            if target in self._where:
                self._where[alias] = self._where[target]

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def names(self) -> list[str]:
        return list(self._where)

    def stored(self, name: str) -> np.ndarray:
        """The tensor as stored (a read-only view of the file)."""
        offset, shape, dtype = self._where[name]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        return self._map[offset: offset + count * dtype.itemsize].view(dtype).reshape(shape)

    def array(self, name: str) -> np.ndarray:
        """float32; int8/int16 weights come with ``NAME_scale`` (per output row, or one number)."""
        values = self.stored(name).astype(np.float32)
        if name + "_scale" in self._where:
            scale = self.stored(name + "_scale").astype(np.float32)
            values /= scale.reshape(-1, *[1] * (values.ndim - 1)) if scale.ndim else scale
        return values
