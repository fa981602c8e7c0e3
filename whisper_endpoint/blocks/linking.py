"""The speakers of a recording decoded in blocks: the blocks' voices grouped into speakers.

Each block's diarizer found its own speakers and one voice (centroid) for each. Voices are grouped by
average linkage on cosine similarity, the closest pair of groups first, as long as the pair is at least
``SAME_VOICE`` alike; two voices of one block are never grouped (that block's diarizer, the one a file of
the block's length gets, already told them apart). ``num_speakers`` groups until that many are left
(whatever their similarity), ``max_speakers`` until no more than that, ``min_speakers`` stops there. A
voice's weight is its speech's duration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Two blocks' centroids of one voice are at least this alike. A centroid pools minutes of speech, so both
# kinds of pair sit higher than a clip and a centroid do (the speaker library's 0.72, speakers/names.py):
# on audio/long/fillets_long in three blocks of 5 minutes, one voice's pairs were 0.97-0.99 and the two
# voices' 0.70-0.74 (docs/long_recordings.md).
SAME_VOICE = 0.85


@dataclass(frozen=True)
class Voice:
    block: int
    label: str  # the block's own label
    vector: np.ndarray
    seconds: float  # its speech in that block
    first: float  # when it first speaks in the recording


def group(voices: list[Voice], *, num_speakers: int | None = None, min_speakers: int | None = None,
          max_speakers: int | None = None, threshold: float = SAME_VOICE) -> list[list[Voice]]:
    """The voices grouped into speakers, in the order they first speak."""
    if not voices:
        return []
    units = np.stack([voice.vector / np.linalg.norm(voice.vector) for voice in voices])
    alike = units @ units.T  # between groups: their voices' similarities averaged, weighted by speech
    weight = np.array([voice.seconds for voice in voices]) + 1e-9
    blocks = np.array([voice.block for voice in voices])
    apart = blocks[:, None] == blocks[None, :]  # groups that share a block (a group with itself too)
    members = {n: [voice] for n, voice in enumerate(voices)}
    low = num_speakers if num_speakers is not None else (min_speakers or 1)
    high = num_speakers if num_speakers is not None else max_speakers
    while len(members) > max(low, 1):
        open_pairs = np.where(apart, -np.inf, alike)
        a, b = np.unravel_index(np.argmax(open_pairs), open_pairs.shape)
        best = open_pairs[a, b]
        if best == -np.inf or (best < threshold and (high is None or len(members) <= high)):
            break
        merged = (weight[a] * alike[a] + weight[b] * alike[b]) / (weight[a] + weight[b])
        alike[a], alike[:, a] = merged, merged
        weight[a] += weight[b]
        apart[a] |= apart[b]
        apart[:, a] = apart[a]
        apart[b], apart[:, b] = True, True  # b is gone into a
        members[a] += members.pop(b)
    return sorted(members.values(), key=lambda group: min(v.first for v in group))


def centroid(members: list[Voice]) -> np.ndarray:
    """A group's voice: its members' unit vectors averaged by their speech."""
    vectors = np.stack([v.vector / np.linalg.norm(v.vector) for v in members])
    weights = np.array([v.seconds for v in members]) + 1e-9
    return (vectors * weights[:, None]).sum(axis=0) / weights.sum()
