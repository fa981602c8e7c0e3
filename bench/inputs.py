"""The audio every item uses, decoded once: a short clip, the long file and its excerpts/repeats."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "audio"
RATE = 16000

SPECULATIVE_CLIPS = (
    "asterisk_vm-record-prepend.flac",
    "asterisk_dictate_play_help.flac",
    "asterisk_dir-usingkeypad.flac",
    "asterisk_dictate_enter_filename.flac",
    "asterisk_conf-adminmenu-162.flac",
)


def clip_path(name: str) -> Path:
    return AUDIO / "clips" / name


@functools.cache
def samples(path: Path) -> np.ndarray:
    """16 kHz mono float32, decoded by faster-whisper's PyAV decoder (the same for every variant)."""
    from faster_whisper import decode_audio

    return decode_audio(str(path), sampling_rate=RATE)


@functools.cache
def clip_language(name: str) -> str:
    """A clip's spoken language (refs.json): short inputs are asked in their own language."""
    import json

    refs = json.loads((AUDIO / "clips" / "refs.json").read_text())
    return next(item["language"] for item in refs if item["file"] == name)


def clip(name: str) -> np.ndarray:
    return samples(clip_path(name))


def long_audio(plan, seconds: float | None = None) -> np.ndarray:
    """The plan's long file, cut to ``seconds`` or repeated end to end to reach it (27 min = two copies);
    with ``plan.long_speech_s``, that much speech followed by silence up to ``seconds``."""
    audio = samples(AUDIO / plan.long_source)
    if seconds is None:
        return audio
    wanted = int(seconds * RATE)
    if plan.long_speech_s is not None:
        speech = audio[: int(plan.long_speech_s * RATE)]
        return np.concatenate([speech, np.zeros(max(0, wanted - len(speech)), dtype=audio.dtype)])[:wanted]
    copies = -(-wanted // len(audio))
    return np.tile(audio, copies)[:wanted].copy()  # a copy: the tiled source can be freed


def seconds_of(audio: np.ndarray) -> float:
    return round(len(audio) / RATE, 1)
