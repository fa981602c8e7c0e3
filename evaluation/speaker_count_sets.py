"""The recordings the speaker count is measured on, and how alike their voices are.

Sets: ``tuning`` and ``judging`` (audio/alike_voices, made by its generate.py), ``short_tuning`` and
``short_judging`` (audio/alike_voices, made by its short.py: 20-39 s, two of the speakers alike, two to
four turns each; the count's join was chosen looking at both) and ``short_fresh`` (made the same way
after and first measured untuned; ``TUNED`` leaves it out), ``negatives`` (one
speaker each: two made there, plus audio/clips' 30 prompts joined here, in name order with
0.5 s between them), ``dev`` (the four files the diarizer was tuned on), ``held_out`` (the Japanese
meeting) and ``long`` (the 13.4 min file). Which sets were tuned on: ``TUNED``.

How alike two voices are: the cosine similarity of their CAM++ centroids, each the mean of the unit
embeddings of that speaker's reference turns, every turn embedded alone (its own samples through
CAM++, no context from the other voices). A pair counts as alike when it is at least as similar as
the Japanese meeting's two women (``reference_similarity``).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.diarization import decode, shown
from support.metrics import read_rttm
from support.paths import AUDIO

ALIKE = AUDIO / "alike_voices"
CLIPS_GAP_S = 0.5
REFERENCE = ("kokoro_ja_meeting", "jf_alpha", "jf_nezumi")  # the dev meeting's two female voices
TUNED = {"tuning", "dev", "negatives", "short_tuning", "short_judging"}
SETS = ("tuning", "dev", "judging", "negatives", "short_tuning", "short_judging", "short_fresh", "held_out", "long")


@dataclass
class Recording:
    name: str
    set: str
    samples: np.ndarray  # 16 kHz mono float32
    reference: object  # pyannote.core.Annotation
    source: str

    @property
    def duration(self) -> float:
        return len(self.samples) / 16000


def load(sets: tuple[str, ...] = SETS) -> list[Recording]:
    """The recordings of ``sets``."""
    files = []
    for name in sets:
        files += _clips_joined() if name == "negatives" else []
        for audio, rttm in _paths(name):
            stem = "pyannote_sample" if rttm.stem == "sample" else rttm.stem  # as evaluation/diarization.py
            files.append(Recording(stem, name, decode(audio), read_rttm(rttm), shown(audio)))
    return sorted(files, key=lambda f: (SETS.index(f.set), f.name))


def _paths(name: str) -> list[tuple[Path, Path]]:
    if name in ("tuning", "judging", "negatives", "short_tuning", "short_judging", "short_fresh"):
        return [(r.with_suffix(".flac"), r) for r in sorted((ALIKE / name).glob("*.rttm"))]
    if name == "dev":
        import pyannote.audio

        sample = Path(pyannote.audio.__file__).parent / "sample"
        dialogues = sorted((AUDIO / "dialogues").glob("*.rttm"))
        return [(sample / "sample.wav", sample / "sample.rttm")] + [(r.with_suffix(".flac"), r) for r in dialogues]
    folder, stem = {"held_out": ("ja", "kokoro_ja_meeting"), "long": ("long", "fillets_long")}[name]
    return [(AUDIO / folder / f"{stem}.flac", AUDIO / folder / f"{stem}.rttm")]


def _clips_joined() -> list[Recording]:
    """The 30 prompts of one speaker, joined: one speaker, 30 turns."""
    from pyannote.core import Annotation, Segment

    clips = sorted(json.loads((AUDIO / "clips" / "refs.json").read_text()), key=lambda r: r["file"])
    gap = np.zeros(round(CLIPS_GAP_S * 16000), np.float32)
    pieces, reference, clock = [gap], Annotation(uri="n3_clips_joined"), CLIPS_GAP_S
    for clip in clips:
        samples = decode(AUDIO / "clips" / clip["file"])
        reference[Segment(clock, clock + len(samples) / 16000)] = "asterisk"
        pieces += [samples, gap]
        clock += (len(samples) + len(gap)) / 16000
    return [Recording("n3_clips_joined", "negatives", np.concatenate(pieces), reference,
                     f"{shown(AUDIO / 'clips')} (30 clips joined)")]


def centroid_similarities(file: Recording, network) -> dict[str, float]:
    """Cosine similarity of every pair of the file's speakers' CAM++ centroids (turns embedded alone)."""
    import torch

    centroids = {}
    for label in file.reference.labels():
        units = []
        for turn in file.reference.label_timeline(label):
            piece = torch.from_numpy(file.samples[round(turn.start * 16000): round(turn.end * 16000)].copy())
            with torch.inference_mode():
                embedding = network(piece[None, None])[0].numpy().astype(np.float64)
            if np.isfinite(embedding).all():
                units.append(embedding / np.linalg.norm(embedding))
        mean = np.mean(units, axis=0)
        centroids[label] = mean / np.linalg.norm(mean)
    return {f"{a} / {b}": round(float(centroids[a] @ centroids[b]), 3)
            for a, b in itertools.combinations(sorted(centroids), 2)}


def reference_similarity(network) -> float:
    meeting = next(f for f in load(("held_out",)) if f.name == REFERENCE[0])
    return centroid_similarities(meeting, network)[f"{REFERENCE[1]} / {REFERENCE[2]}"]
