"""The layout of a CTranslate2 ``model.bin`` (binary version 6; convert.py's docstring describes it):
where each variable lies, for readers that turn the bytes into tensors their own way."""

from __future__ import annotations

import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    offset: int  # of its data, in bytes from the file's start
    shape: tuple[int, ...]
    dtype_id: int  # ctranslate2's DataType order: float32, int8, int16, int32, float16, bfloat16
    size: int  # bytes


@dataclass(frozen=True)
class Layout:
    version: int
    spec: str | None  # None: a version other than 6, whose header is not read further
    variables: dict[str, Variable]
    aliases: list[tuple[str, str]]  # (alias, target)


def layout(data) -> Layout:
    """The header of ``data`` (bytes, a bytearray or a uint8 memmap) walked, no tensor read."""
    pos = 0

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
    if version != 6:
        return Layout(version, None, {}, [])
    spec = string()
    if spec != "WhisperSpec":
        return Layout(version, spec, {}, [])
    take("I")  # spec revision
    variables = {}
    for _ in range(take("I")):
        name, rank = string(), take("B")
        shape = tuple(take("I") for _ in range(rank))
        dtype_id, size = take("B"), take("I")
        variables[name] = Variable(pos, shape, dtype_id, size)
        pos += size
    aliases = [(string(), string()) for _ in range(take("I"))]
    return Layout(version, spec, variables, aliases)
