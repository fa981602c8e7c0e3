"""Known speakers' clips: decoded and checked (a request's ``known_speakers``, the OpenAI form's references,
the ``SPEAKERS_DIR`` folders), then turned into one voiceprint per name with the diarizer's embedding.

Clips have their own length limits and never count toward ``MAX_AUDIO_SECONDS``; the body limits of the
server still bound them (they travel in the request body).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pydantic import TypeAdapter, ValidationError

from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.core.config import KnownSpeaker, SpeakerName
from whisper_endpoint.core.errors import (
    ClientError,
    InvalidInputError,
    InvalidParameterError,
    ModelLoadError,
    PayloadTooLargeError,
)
from whisper_endpoint.core.types import SAMPLE_RATE

logger = logging.getLogger("whisper_endpoint.speaker_enrolment")  # its name in the logs, as before the move

SHORTEST_CLIP_S = 2.0
LONGEST_CLIP_S = 30.0
Voices = dict[str, list[np.ndarray]]  # name -> clips (16 kHz mono float32)
_NAME = TypeAdapter(SpeakerName)


def request_clips(known: list[KnownSpeaker], where: str = "parameters.known_speakers") -> Voices:
    """Each known speaker's clips, decoded; a 4xx naming the clip when one is not 2-30 s of audio."""
    return {
        speaker.name: [decode_clip(text, f"{where}[{i}].audio[{j}]") for j, text in enumerate(speaker.audio)]
        for i, speaker in enumerate(known)
    }


def decode_clip(text: str, where: str, *, longest: float = LONGEST_CLIP_S) -> np.ndarray:
    """A base64 string or data URL of an audio file -> samples; ``where`` names it in errors."""
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    try:
        data = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError(f"{where}: not base64; send an audio file as base64 or a data URL") from None
    return clip_samples(data, where, longest=longest)


def clip_samples(data: bytes, where: str, *, longest: float = LONGEST_CLIP_S) -> np.ndarray:
    try:
        samples = decode_file(data, max_seconds=longest + 0.05).samples
    except PayloadTooLargeError:
        raise InvalidParameterError(f"{where}: the clip is longer than {longest:g} s; send "
                                    f"{SHORTEST_CLIP_S:g}-{longest:g} s of the speaker alone") from None
    except ClientError as exc:  # not audio, no audio stream, empty
        raise type(exc)(f"{where}: {exc.message}") from None
    seconds = len(samples) / SAMPLE_RATE
    if not SHORTEST_CLIP_S <= seconds <= longest:
        raise InvalidParameterError(f"{where}: the clip lasts {seconds:.1f} s; send "
                                    f"{SHORTEST_CLIP_S:g}-{longest:g} s of the speaker alone")
    return samples


def read_speakers_dir(path: Path) -> Voices:
    """``SPEAKERS_DIR``: one folder per name, each holding clips of that voice; any problem names its path."""
    path = Path(path)
    if not path.is_dir():
        raise ModelLoadError(f"SPEAKERS_DIR={path} is not a readable directory")
    voices: Voices = {}
    try:
        folders = sorted(item for item in path.iterdir() if item.is_dir() and not item.name.startswith("."))
        for folder in folders:
            voices[_folder_name(folder)] = [_file_clip(file) for file in _clip_files(folder)]
    except OSError as exc:
        raise ModelLoadError(f"SPEAKERS_DIR={path} could not be read: {exc}") from exc
    if not voices:
        raise ModelLoadError(f"SPEAKERS_DIR={path} holds no speaker folders (one folder per name, clips inside)")
    logger.info("SPEAKERS_DIR %s: %s", path, ", ".join(f"{name} ({len(c)} clips)" for name, c in voices.items()))
    return voices


def _folder_name(folder: Path) -> str:
    try:
        return _NAME.validate_python(folder.name)
    except ValidationError as exc:
        raise ModelLoadError(f"SPEAKERS_DIR folder {folder}: not a usable name ({exc.errors()[0]['msg']})") from None


def _clip_files(folder: Path) -> list[Path]:
    files = sorted(item for item in folder.iterdir() if item.is_file() and not item.name.startswith("."))
    if not files:
        raise ModelLoadError(f"SPEAKERS_DIR folder {folder} holds no clips")
    return files


def _file_clip(file: Path) -> np.ndarray:
    try:
        return clip_samples(file.read_bytes(), str(file))
    except ClientError as exc:
        raise ModelLoadError(f"SPEAKERS_DIR clip {exc.message}") from None


def voiceprints(voices: Voices, embed: Callable[[np.ndarray], np.ndarray]) -> dict[str, np.ndarray]:
    """One unit vector per name: the mean of its clips' unit embeddings (each clip counts the same)."""
    prints = {}
    for name, clips in voices.items():
        mean = np.mean([_unit(embed(clip)) for clip in clips], axis=0)
        prints[name] = _unit(mean)
    return prints


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(vector)
    return vector / norm if np.isfinite(norm) and norm > 0 else vector
