"""Known speakers by name: the diarization's speakers matched one-to-one to enrolled voiceprints.

Each speaker of the request is represented by its centroid (the pipeline's own, from clustering; the
embedding of that speaker's exclusive turns when the pipeline gives none). The cosine similarities
between centroids and voiceprints form a matrix; the Hungarian algorithm (scipy's
``linear_sum_assignment``) picks the pairing with the highest total similarity, so two speakers never
get one name, and a pair below ``MATCH_THRESHOLD`` is dropped: that speaker keeps ``SPEAKER_xx``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from whisper_endpoint.core.types import SAMPLE_RATE, SpeakerTurn

# Cosine similarity (CAM++) at or above which a speaker takes an enrolled name, chosen on the dev
# dialogues (fillets_barrel, flite_meeting) with evaluation/known_speakers.py: the midpoint of the
# lowest similarity of a right pairing and the highest of a wrong one. With the per-window embeddings
# these were 0.808 and 0.700 (0.75; results/known_speakers.json); the pooled centroids of issue 19 sit
# further from a clip embedded alone: 0.773 (a fish enrolled with one clip) and 0.673 (kal16 against
# another flite voice), so 0.72.
MATCH_THRESHOLD = 0.72
_CENTROID_SPEECH_S = 30.0  # speech embedded per speaker when the pipeline gives no centroid


@dataclass(frozen=True)
class Match:
    speaker: str  # the diarization's label
    name: str
    similarity: float


def match(
    centroids: dict[str, np.ndarray], prints: dict[str, np.ndarray], threshold: float = MATCH_THRESHOLD
) -> list[Match]:
    """The one-to-one pairing of speakers and names with the highest total similarity, above ``threshold``."""
    from scipy.optimize import linear_sum_assignment

    speakers = [label for label, vector in centroids.items() if _usable(vector)]
    names = list(prints)
    if not speakers or not names:
        return []
    similarity = _unit_rows([centroids[s] for s in speakers]) @ _unit_rows([prints[n] for n in names]).T
    rows, columns = linear_sum_assignment(similarity, maximize=True)
    return [
        Match(speakers[row], names[column], round(float(similarity[row, column]), 4))
        for row, column in zip(rows, columns)
        if similarity[row, column] >= threshold
    ]


def renamed(turns: list[SpeakerTurn], matches: list[Match]) -> list[SpeakerTurn]:
    names = {found.speaker: found.name for found in matches}
    return [SpeakerTurn(t.start, t.end, names.get(t.speaker, t.speaker)) for t in turns]


def centroids(
    given: dict[str, np.ndarray],
    exclusive: list[SpeakerTurn],
    samples: np.ndarray,
    embed: Callable[[np.ndarray], np.ndarray],
    rate: int = SAMPLE_RATE,
) -> dict[str, np.ndarray]:
    """Every speaker's centroid: the pipeline's, else the embedding of its first 30 s of exclusive speech."""
    result = {}
    for speaker in sorted({turn.speaker for turn in exclusive}):
        if speaker in given and _usable(given[speaker]):
            result[speaker] = given[speaker]
            continue
        speech = _speech_of(speaker, exclusive, samples, rate)
        if len(speech) >= rate:  # under a second of speech gives no reliable embedding
            result[speaker] = np.asarray(embed(speech), dtype=np.float64)
    return result


def _speech_of(speaker: str, exclusive: list[SpeakerTurn], samples: np.ndarray, rate: int) -> np.ndarray:
    pieces, total = [], 0
    for turn in exclusive:
        if turn.speaker != speaker or total >= _CENTROID_SPEECH_S * rate:
            continue
        piece = samples[round(turn.start * rate): round(turn.end * rate)]
        pieces.append(piece)
        total += len(piece)
    return np.concatenate(pieces)[: round(_CENTROID_SPEECH_S * rate)] if pieces else np.zeros(0, np.float32)


def _usable(vector) -> bool:
    vector = np.asarray(vector, dtype=np.float64)
    return vector.ndim == 1 and bool(np.isfinite(vector).all()) and float(np.linalg.norm(vector)) > 0


def _unit_rows(vectors: list[np.ndarray]) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float64)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
