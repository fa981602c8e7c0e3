"""One block's result, as the runner keeps it and as a job's store holds it (JSON)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

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


def key(start: int, stop: int, parameters: dict) -> str:
    """What a saved block must match to be taken: its samples' range and the request's parameters."""
    text = json.dumps([start, stop, parameters], sort_keys=True, default=str)
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
