"""Turn the raw ``{"inputs": ..., "parameters": {...}}`` payload into audio plus validated options.

Accepted ``inputs``: a base64 string of an audio file (JSON bodies), raw bytes (binary ``audio/*``
bodies through the toolkit, and what ``InferenceClient.automatic_speech_recognition`` sends), or
``{"array": [...], "sampling_rate": N}`` (``"raw"`` is accepted for ``"array"``, as in transformers).
With ``multichannel: true`` the channels are kept apart (``Audio.samples`` is channels x samples) and
``channel_names``, when given, must name each of them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from whisper_endpoint.audio.decode import Audio, channels_from_array, decode_channels, decode_file, from_array
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.errors import InvalidInputError, InvalidParameterError, MissingInputError


@dataclass
class ParsedRequest:
    audio: Audio
    config: InferenceConfig
    warnings: list[str] = field(default_factory=list)


def parse_parameters(parameters) -> tuple[InferenceConfig, list[str]]:
    """Validate ``parameters``; unknown keys are ignored and named in the returned warnings."""
    if parameters is None:
        parameters = {}
    if not isinstance(parameters, Mapping):
        raise InvalidParameterError(
            f"'parameters' must be an object, got {type(parameters).__name__}"
        )
    unknown = sorted(str(key) for key in parameters if key not in InferenceConfig.known_fields())
    try:
        config = InferenceConfig.model_validate(dict(parameters))
    except ValidationError as exc:
        raise InvalidParameterError(_describe(exc)) from None
    warnings = [f"ignored unknown parameter {name!r}" for name in unknown]
    return config, warnings


def parse_request(data, *, max_seconds: float, spool_over_s: float | None = None) -> ParsedRequest:
    """``spool_over_s``: a mono file decoding to more than this is kept on disk (audio/spool.py)."""
    if not isinstance(data, Mapping):
        raise InvalidInputError(
            f"the request must be an object with 'inputs', got {type(data).__name__}"
        )
    if "inputs" not in data or data["inputs"] is None:
        raise MissingInputError("the request has no 'inputs' (base64 audio, raw bytes or an array)")
    config, warnings = parse_parameters(data.get("parameters"))
    audio = _audio(data["inputs"], config, warnings, max_seconds, spool_over_s)
    _check_channel_options(config, audio, warnings)
    return ParsedRequest(audio, config, [*warnings, *audio.warnings])


def _audio(inputs, config: InferenceConfig, warnings: list[str], max_seconds: float,
           spool_over_s: float | None) -> Audio:
    if isinstance(inputs, Mapping):
        return _array_audio(inputs, config, warnings, max_seconds)
    if isinstance(inputs, (bytes, bytearray, memoryview)):
        data = bytes(inputs)
    elif isinstance(inputs, str):
        data = _b64decode(inputs)
    else:
        raise InvalidInputError(
            "'inputs' must be a base64 string, raw bytes or {'array': [...], 'sampling_rate': N}; "
            f"got {type(inputs).__name__}"
        )
    if "sampling_rate" in config.model_fields_set:
        warnings.append(
            "'sampling_rate' applies to array inputs only; the file's own sample rate was used"
        )
    if config.multichannel:
        return decode_channels(data, max_seconds=max_seconds)
    return decode_file(data, max_seconds=max_seconds, spool_over_s=spool_over_s)


def _array_audio(inputs: Mapping, config, warnings, max_seconds) -> Audio:
    key = "array" if "array" in inputs else "raw" if "raw" in inputs else None
    if key is None:
        raise MissingInputError("an object in 'inputs' needs 'array': [samples...]")
    rate = inputs.get("sampling_rate", config.sampling_rate)
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1000 <= rate <= 384000:
        raise InvalidParameterError(
            f"inputs.sampling_rate must be an integer in 1000..384000 Hz, got {rate!r}"
        )
    if "sampling_rate" in inputs and "sampling_rate" in config.model_fields_set and (
        rate != config.sampling_rate
    ):
        warnings.append(
            f"inputs.sampling_rate={rate} was used; parameters.sampling_rate="
            f"{config.sampling_rate} was ignored"
        )
    convert = channels_from_array if config.multichannel else from_array
    try:
        return convert(inputs[key], rate, max_seconds=max_seconds)
    except OverflowError:  # a JSON integer of hundreds of digits: too large for any float
        raise InvalidInputError("inputs.array must be numbers in -1..1; one is too large for any float") from None


def _check_channel_options(config: InferenceConfig, audio: Audio, warnings: list[str]) -> None:
    """Multichannel: one name per channel. Without it the channel options have nothing to apply to."""
    if not config.multichannel:
        ignored = sorted({"channel_names", "diarize_channels"} & config.model_fields_set)
        if ignored:
            warnings.append(f"{', '.join(ignored)} apply with multichannel: true only; ignored")
        return
    names, count = config.channel_names, audio.samples.shape[0]
    if names is not None and len(names) != count:
        raise InvalidParameterError(
            f"parameters.channel_names: {len(names)} names for {count} channels; give one name per channel"
        )


_URLSAFE = str.maketrans("-_", "+/")
_ECHO_CHARS = 100  # longest piece of a client's value quoted back in an error message


def _b64decode(text: str) -> bytes:
    # Tolerate data URLs ("data:audio/wav;base64,...") and line breaks; reject anything else.
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    compact = "".join(text.split()).translate(_URLSAFE)
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError(
            "'inputs' is a string but not valid base64; send base64-encoded audio bytes"
        ) from exc


def echoed(value) -> str:
    """A client's value as quoted back in an error: named, but never a huge one in full (a 1 MB
    'language' would otherwise come back as a 1 MB error)."""
    text = repr(value)
    return text if len(text) <= _ECHO_CHARS else f"{text[:_ECHO_CHARS]}... ({len(text)} characters)"


MAX_ERRORS_DESCRIBED = 5  # a payload can hold thousands of wrong values; the first ones say enough
_ERROR_CHARS = 300  # longest description of one of them


def _describe(exc: ValidationError) -> str:
    parts = []
    errors = exc.errors()
    for error in errors[:MAX_ERRORS_DESCRIBED]:
        message = error["msg"].removeprefix("Value error, ")
        if error["loc"]:
            where = ".".join(str(part) for part in error["loc"])
            where = where if len(where) <= _ECHO_CHARS else f"{where[:_ECHO_CHARS]}..."  # keys are the client's too
            got = repr(error.get("input"))
            short = echoed(error.get("input"))
            message = f"parameters.{where}: {message.replace(got, short)} (got {short})"
        parts.append(message if len(message) <= _ERROR_CHARS else f"{message[:_ERROR_CHARS]}...")
    if len(errors) > MAX_ERRORS_DESCRIBED:
        parts.append(f"and {len(errors) - MAX_ERRORS_DESCRIBED} more")
    return "invalid parameters: " + "; ".join(parts)
