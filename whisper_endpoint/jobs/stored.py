"""A job's payload as it waits on disk: parsed once, at submission, into what the worker reads back
without parsing it again.

A JSON job body is decoded (in steps, on the submission's thread) and checked before the 202; then its
upload is rewritten as the audio it carries: the samples of array inputs as float32 (``.npz``: 4
bytes a sample, where the JSON's Python floats took 32) or the base64 text of string inputs, and its
parameters go into the job's row. Audio files stay as uploaded. Either is blocking (run it on a thread).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from whisper_endpoint.adapters.payloads import is_json, toolkit_payload
from whisper_endpoint.core.errors import InvalidInputError, MissingInputError
from whisper_endpoint.jobs.uploads import sync_folder
from whisper_endpoint.pipeline.request import parse_parameters

# Media types of rewritten uploads; a client sending either gets 415 like any type no route takes.
SAMPLES = "application/vnd.whisper-endpoint.samples"
BASE64 = "application/vnd.whisper-endpoint.base64"


def store(path: Path, kind: str, parameters: dict) -> tuple[str, dict]:
    """Check the upload at ``path`` (422/400 before the 202, not a failed job) and rewrite a JSON one;
    returns the job's media type and parameters."""
    if not is_json(kind):
        parse_parameters(parameters)
        return kind, parameters
    data = toolkit_payload(path.read_bytes(), kind, parameters)  # the body's bytes are freed on return
    if not isinstance(data, dict) or data.get("inputs") is None:
        raise MissingInputError("the JSON body has no 'inputs' (base64 audio)")
    parse_parameters(data.get("parameters"))
    parameters, inputs = data.get("parameters") or {}, data["inputs"]
    if isinstance(inputs, str):
        _replace(path, lambda file: file.write(inputs.encode("ascii", "replace")))
        return BASE64, parameters
    if isinstance(inputs, Mapping) and ("array" in inputs or "raw" in inputs):
        samples = inputs["array"] if "array" in inputs else inputs["raw"]
        try:
            samples = np.asarray(samples, dtype=np.float32)
        except (TypeError, ValueError, OverflowError):  # an integer too large for any float: OverflowError
            raise InvalidInputError("inputs.array must be numbers: [samples...], or one list per channel") from None
        extra = {"sampling_rate": np.asarray(inputs["sampling_rate"])} if "sampling_rate" in inputs else {}
        _replace(path, lambda file: np.savez(file, array=samples, **extra))
        return SAMPLES, parameters
    return kind, parameters  # anything else stays JSON: the handler says what is wrong with it


def payload(path: Path, kind: str, parameters: dict) -> dict:
    """The handler's payload of a stored job (``OSError`` when its upload is gone)."""
    if kind == SAMPLES:
        with np.load(path) as stored:
            inputs = {"array": stored["array"]}
            if "sampling_rate" in stored:
                inputs["sampling_rate"] = stored["sampling_rate"].item()
        return {"inputs": inputs, "parameters": parameters}
    data = path.read_bytes()
    if kind == BASE64:
        return {"inputs": data.decode("ascii"), "parameters": parameters}
    return toolkit_payload(data, kind, parameters)


def _replace(path: Path, write: Callable) -> None:
    """What ``write(file)`` writes in place of the upload, durably (synced, then renamed over it)."""
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as file:
        write(file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)
    sync_folder(path.parent)
