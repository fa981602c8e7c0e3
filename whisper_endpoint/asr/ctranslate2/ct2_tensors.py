"""A CTranslate2 ``model.bin``'s tensors by name, read with numpy (no ctranslate2, no torch).

The layout is the one weights/convert.py documents (binary version 6), walked by weights/model_bin.py. The file is memory-mapped: a
tensor costs memory only once it is read, and reading one returns float32, quantization undone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from whisper_endpoint.weights.model_bin import layout

# model.bin dtype ids in ctranslate2's DataType order; bfloat16 (5) has no numpy type.
_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16)


class ModelBin:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._map = np.memmap(self.path, dtype=np.uint8, mode="r")
        self._where: dict[str, tuple[int, tuple[int, ...], np.dtype]] = {}
        self._index()

    def _index(self) -> None:
        found = layout(self._map)
        if found.spec != "WhisperSpec":
            raise ValueError(f"{self.path}: not a version 6 WhisperSpec model.bin")
        for name, variable in found.variables.items():
            if variable.dtype_id < len(_DTYPES):  # anything else is never read here
                self._where[name] = (variable.offset, variable.shape, np.dtype(_DTYPES[variable.dtype_id]))
        for alias, target in found.aliases:
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
