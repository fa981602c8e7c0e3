"""One block's result, as the runner keeps it and as a job's store holds it (JSON)."""

from __future__ import annotations

import hashlib
import json
import threading
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from whisper_endpoint.core.types import Segment, SpeakerTurn, Transcript, Word
from whisper_endpoint.diarization.base import Diarization


@dataclass
class BlockResult:
    """Times are the recording's (the block's start added). ``voices``: each of the block's speakers'
    centroid and seconds of speech (the linking's input); ``diarization`` None: not diarized, or no speech."""

    start: int  # samples
    stop: int
    windows: int  # windows decoded (progress)
    transcript: Transcript
    diarization: Diarization | None
    voices: dict[str, tuple[np.ndarray, float]]


def key(start: int, stop: int, samples: str, parameters: dict, work: dict) -> str:
    """What a saved block must match to be taken: everything that decides its result. Two parts, so that a
    block kept under another key can be told apart (``why_not_taken``): the block's (its samples' range,
    their digest ``samples_digest`` and the request's parameters), then the models' (``work``)."""
    return f"{_digest([start, stop, samples, parameters])}-{_digest(work)}"


def samples_digest(piece: np.ndarray) -> str:
    """The digest of a block's float32 samples (~60 ms for a 10 minute block)."""
    return hashlib.blake2b(np.ascontiguousarray(piece, dtype=np.float32).data, digest_size=16).hexdigest()


def work(asr, diarizer) -> dict:
    """What decodes a block: the ASR model (its name and the digest of its files), the backend, its
    compute type (or dtype), device and assistant, and the diarizer's settings (None: not diarized)."""
    described = {name: str(getattr(asr, name)) for name in _ASR_FIELDS if getattr(asr, name, None) is not None}
    return {"asr": {**described, "weights": weights_digest(asr)},
            "diarizer": None if diarizer is None else diarizer.description()}


def why_not_taken(kept: str, wanted: str) -> str:
    """Why a block kept under ``kept`` was not taken for ``wanted`` (both ``key``s)."""
    if "-" not in kept:
        return "kept under an older key, which held neither the samples nor the models"
    if kept.partition("-")[0] == wanted.partition("-")[0]:
        return "decoded by another model, backend, compute type or diarizer"
    return "kept for other samples or other blocks"


# The backends' attributes that decide what they decode (those a backend has).
_ASR_FIELDS = ("name", "model_name", "device", "compute_type", "dtype", "attention", "assistant_name")
_digests: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # backend -> its files' digest
_digesting = threading.Lock()


def weights_digest(asr) -> str | None:
    """The digest of the files of ``asr``'s model directory (``model_path``; None when it has none): names,
    sizes and bytes. Read once per loaded backend, at its first block, and kept (~0.6 s a GB here)."""
    path = getattr(asr, "model_path", None)
    if path is None:
        return None
    with _digesting:
        if asr not in _digests:
            _digests[asr] = _files_digest(Path(path))
        return _digests[asr]


def _files_digest(directory: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        digest.update(f"{path.name}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as file:
            while chunk := file.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()


def _digest(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def dumped(result: BlockResult) -> dict:
    transcript = result.transcript
    found = result.diarization
    return {
        "start": result.start, "stop": result.stop, "windows": result.windows,
        "transcript": {
            "segments": [asdict(segment) for segment in transcript.segments],
            "language": transcript.language, "language_probability": transcript.language_probability,
            "decoding": transcript.decoding, "warnings": transcript.warnings,
        },
        "diarization": None if found is None else {
            "turns": [asdict(turn) for turn in found.turns],
            "exclusive": [asdict(turn) for turn in found.exclusive],
            "warnings": found.warnings,
        },
        "voices": {label: [vector.tolist(), seconds] for label, (vector, seconds) in result.voices.items()},
    }


def loaded(body: dict) -> BlockResult:
    transcript = body["transcript"]
    found = body["diarization"]
    return BlockResult(
        start=body["start"], stop=body["stop"], windows=body["windows"],
        transcript=Transcript(
            segments=[_segment(segment) for segment in transcript["segments"]],
            language=transcript["language"], language_probability=transcript["language_probability"],
            decoding=transcript["decoding"], warnings=transcript["warnings"],
        ),
        diarization=None if found is None else Diarization(
            turns=[SpeakerTurn(**turn) for turn in found["turns"]],
            exclusive=[SpeakerTurn(**turn) for turn in found["exclusive"]],
            warnings=found["warnings"],
        ),
        voices={label: (np.asarray(vector, dtype=np.float64), seconds)
                for label, (vector, seconds) in body["voices"].items()},
    )


def _segment(fields: dict) -> Segment:
    words = fields["words"]
    return Segment(**{**fields, "words": None if words is None else tuple(Word(**word) for word in words)})
