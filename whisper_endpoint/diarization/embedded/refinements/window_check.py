"""A window-level look at who speaks: short windows of every turn, clustered as senko clusters them.

The clustering sees one embedding per (10 s window, local speaker). When two voices are alike the
segmentation model often takes both for one local speaker, that embedding mixes them, and their turns
come out mixed. 1.5 s windows of the speech tell such voices apart, so here (as senko does, on the CAM++
frames the pipeline already computed: one dense layer per window, no second CAM++ pass): windows of
``window`` s every ``hop`` s inside the speech, clustered spectrally (cosine affinity pruned to each
window's nearest windows, the unnormalised Laplacian's eigenvectors, k-means) into as many speakers as
the pipeline found or was told; each turn then follows its windows: relabelled whole, or cut where its
windows change group. A turn under ``min_turn`` s, which a window cannot resolve, moves only when its
own embedding agrees. It never adds or removes a speaker: the count stays the count check's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pyannote.core import Annotation, Segment

from whisper_endpoint.diarization.embedded.pooled import FRAME_RATE
from whisper_endpoint.diarization.embedded.refinements.turn_check import Move


@dataclass(frozen=True)
class WindowCheckOptions:
    """Attributes:
      window, hop: seconds of each window and between window starts.
      max_windows: the hop grows so that no more windows are clustered (the eigensolver is cubic in them).
      gap: turns closer than this (s) are one stretch of speech to cut into windows.
      neighbours: each window's affinity keeps its ``max(neighbours * n, min_neighbours)`` nearest windows.
      min_windows: fewer windows than this: nothing is moved.
      min_cluster: clusters of fewer windows join the nearest.
      min_run: a run of one cluster inside a turn shorter than this (s) joins its neighbour.
      min_turn, agree_margin: a turn shorter than ``min_turn`` s follows its windows only when its own
        embedding is nearer the new speaker's windows than its speaker's by ``agree_margin`` (cosine).
    """

    window: float = 1.5
    hop: float = 0.75
    max_windows: int = 1500
    gap: float = 0.5
    neighbours: float = 0.012
    min_neighbours: int = 6
    min_windows: int = 10
    min_cluster: int = 4
    min_run: float = 1.0
    min_turn: float = 1.0
    agree_margin: float = 0.11


@dataclass(frozen=True)
class Windows:
    spans: np.ndarray  # (n, 2) seconds
    embeddings: np.ndarray  # (n, dimension), unit length


def moves(exclusive: Annotation, embed_spans: Callable[[np.ndarray], np.ndarray], count: int,
          options: WindowCheckOptions) -> tuple[list[Move], dict[str, np.ndarray]]:
    """The moves that make every turn follow its windows' cluster, and each speaker's new centroid (the
    mean of its windows' embeddings). ``embed_spans``: (n, 2) spans in seconds -> (n, dimension)
    embeddings, NaN where no frame was computed; ``count``: the speakers to cluster into."""
    tracks = sorted(exclusive.itertracks(yield_label=True))
    turns, owners = [turn for turn, _, _ in tracks], [label for _, _, label in tracks]
    windows = _windows(exclusive, embed_spans, options)
    if count < 2 or len(windows.spans) < max(options.min_windows, count):
        return [], {}
    clusters = _clusters(windows.embeddings, count, options)
    pieces = _pieces(turns, windows, clusters, options.min_run)
    names = _names(pieces, owners, sorted(set(owners)))
    centre = {name: windows.embeddings[np.isin(clusters, [c for c, n in names.items() if n == name])].mean(axis=0)
              for name in set(names.values())}
    found, named = [], set(names.values())
    for turn_index, span, cluster in pieces:
        old, new = owners[turn_index], names[cluster]
        if old == new or old not in named:  # a speaker no cluster took keeps its turns: the count stays
            continue
        turn = turns[turn_index]
        if turn.duration < options.min_turn and not _agrees(embed_spans, turn, centre.get(old), centre[new], options):
            continue
        found.append(Move(span, old, new))
    return found, centre


def _windows(exclusive: Annotation, embed_spans: Callable, options: WindowCheckOptions) -> Windows:
    """senko's windows of every stretch of speech (the last one ending with the stretch), embedded."""
    stretches = list(exclusive.get_timeline().support(collar=options.gap))
    speech = sum(stretch.duration for stretch in stretches)
    hop = max(options.hop, speech / options.max_windows)
    spans = []
    for stretch in stretches:
        start = stretch.start
        while start + options.window < stretch.end:
            spans.append((start, start + options.window))
            start += hop
        if start < stretch.end:
            spans.append((max(stretch.start, min(stretch.end - options.window, start)), stretch.end))
    spans = np.array(spans, dtype=np.float64).reshape(-1, 2)
    embeddings = np.asarray(embed_spans(spans), dtype=np.float64) if len(spans) else np.zeros((0, 1))
    usable = np.isfinite(embeddings).all(axis=1) & (np.linalg.norm(embeddings, axis=1) > 0)
    return Windows(spans[usable], _unit(embeddings[usable]))


def _clusters(unit: np.ndarray, count: int, options: WindowCheckOptions) -> np.ndarray:
    """senko's spectral clustering at ``count``: the pruned, symmetrised cosine affinity's unnormalised
    Laplacian, k-means on its first eigenvectors, clusters of under ``min_cluster`` windows to the nearest."""
    from scipy.linalg import eigh
    from sklearn.cluster import KMeans

    n = len(unit)
    affinity = unit @ unit.T
    dropped = min(int((1 - options.neighbours) * n), n - options.min_neighbours)
    if dropped > 0:
        lowest = np.argpartition(affinity, dropped - 1, axis=1)[:, :dropped]
        np.put_along_axis(affinity, lowest, 0.0, axis=1)
    affinity = 0.5 * (affinity + affinity.T)
    np.fill_diagonal(affinity, 0.0)
    laplacian = np.diag(np.abs(affinity).sum(axis=1)) - affinity
    _, vectors = eigh(laplacian, subset_by_index=[0, count - 1], driver="evr")
    labels = KMeans(n_clusters=count, n_init=10, random_state=0).fit_predict(vectors)
    return _small_to_nearest(labels, unit, options.min_cluster)


def _small_to_nearest(labels: np.ndarray, unit: np.ndarray, size: int) -> np.ndarray:
    ids, counts = np.unique(labels, return_counts=True)
    major = ids[counts >= size]
    if len(major) in (0, len(ids)):
        return labels
    centres = _unit(np.stack([unit[labels == i].mean(axis=0) for i in major]))
    minor = ~np.isin(labels, major)
    labels = labels.copy()
    labels[minor] = major[np.argmax(unit[minor] @ centres.T, axis=1)]
    return labels


def _pieces(turns: list[Segment], windows: Windows, clusters: np.ndarray,
            min_run: float) -> list[tuple[int, Segment, int]]:
    """(turn index, span, cluster): each turn cut into runs of one cluster, every frame taking the cluster
    of the nearest window centre among the windows that overlap the turn; runs under ``min_run`` s join
    a neighbour."""
    centres = windows.spans.mean(axis=1)
    pieces = []
    for index, turn in enumerate(turns):
        inside = np.flatnonzero((windows.spans[:, 0] < turn.end) & (windows.spans[:, 1] > turn.start))
        if not len(inside):
            continue
        times = np.arange(turn.start, turn.end, 1 / FRAME_RATE) + 0.5 / FRAME_RATE
        nearest = inside[np.argmin(np.abs(times[:, None] - centres[inside][None]), axis=1)]
        for cluster, first, last in _smoothed(clusters[nearest], round(min_run * FRAME_RATE)):
            start = turn.start if first == 0 else turn.start + first / FRAME_RATE
            end = turn.end if last == len(times) else turn.start + last / FRAME_RATE
            pieces.append((index, Segment(start, end), int(cluster)))
    return pieces


def _smoothed(values: np.ndarray, shortest: int) -> list[list]:
    """[value, first, last) runs of ``values``, runs shorter than ``shortest`` joined to the longer
    neighbour, the shortest first."""
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(values)) + 1, [len(values)]])
    runs = [[values[a], int(a), int(b)] for a, b in zip(bounds[:-1], bounds[1:])]
    while len(runs) > 1:
        lengths = [last - first for _, first, last in runs]
        i = int(np.argmin(lengths))
        if lengths[i] >= shortest:
            break
        j = 1 if i == 0 else i - 1 if i == len(runs) - 1 or lengths[i - 1] >= lengths[i + 1] else i + 1
        runs[j][1], runs[j][2] = min(runs[j][1], runs[i][1]), max(runs[j][2], runs[i][2])
        del runs[i]
        merged = [runs[0]]
        for run in runs[1:]:
            if run[0] == merged[-1][0]:
                merged[-1][2] = run[2]
            else:
                merged.append(run)
        runs = merged
    return runs


def _names(pieces: list[tuple[int, Segment, int]], owners: list[str], labels: list[str]) -> dict[int, str]:
    """Cluster -> speaker label: each cluster takes the label whose turns it covers most, each label once,
    the largest overlaps first; a cluster left over takes a label left over."""
    clusters = sorted({cluster for _, _, cluster in pieces})
    overlap = np.zeros((len(clusters), len(labels)))
    for turn, span, cluster in pieces:
        overlap[clusters.index(cluster), labels.index(owners[turn])] += span.duration
    names, taken = {}, set()
    for flat in np.argsort(-overlap, axis=None, kind="stable"):
        c, s = np.unravel_index(flat, overlap.shape)
        if overlap[c, s] > 0 and clusters[c] not in names and labels[s] not in taken:
            names[clusters[c]] = labels[s]
            taken.add(labels[s])
    spare = [label for label in labels if label not in taken]
    for cluster in clusters:
        if cluster not in names:
            names[cluster] = spare.pop(0) if spare else owners[0]
    return names


def _agrees(embed_spans: Callable, turn: Segment, old: np.ndarray | None, new: np.ndarray,
            options: WindowCheckOptions) -> bool:
    """Whether a short turn's own embedding is nearer the new speaker's windows by ``agree_margin``."""
    own = np.asarray(embed_spans(np.array([[turn.start, turn.end]])), dtype=np.float64)[0]
    if old is None or not np.isfinite(own).all() or not np.linalg.norm(own):
        return False
    own = own / np.linalg.norm(own)
    return float(own @ _unit(new[None])[0] - own @ _unit(old[None])[0]) > options.agree_margin


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)
