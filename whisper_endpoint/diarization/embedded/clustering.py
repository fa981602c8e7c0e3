"""The global clustering in memory linear in the recording's length (issue 62).

pyannote's agglomerative clustering links every (window, local speaker) embedding: scipy's linkage holds
their pairwise distances, N * (N - 1) / 2 doubles, about 3.5 GiB at 4 hours with a 1 s window step. Above
``max_linked`` embeddings, the dendrogram is built over a subset of them spread evenly over the recording
(about as if the windows stepped further apart), with the same threshold and minimum cluster size, and
every embedding then goes to the nearest of the clusters' centroids (as pyannote's VBx and senko cluster
long recordings through a bounded set). At or below it, nothing changes: pyannote's own clustering runs.
The subset also keeps the density the threshold and ``min_cluster_size`` were chosen at (both count
embeddings, whatever the length); the measurements: docs/diarization.md.

A call whose file is marked narrowband (channel.py: a telephone line) links at the threshold less
``narrowband_shift``: the line brings two voices' CAM++ embeddings closer, a voice's own turns much less
(docs/rooms.md).
"""

from __future__ import annotations

import threading

import numpy as np
from pyannote.audio.pipelines.clustering import AgglomerativeClustering
from scipy.spatial.distance import cdist

# The most embeddings linked at once: about 30 min of two voices at the window step of 1 s (the 13.4 min
# recording gives 1,308); their distances take 8 * N^2 / 2 bytes = 34 MiB.
MAX_LINKED = 3000
# How much closer a telephone line's voices are linked (tuning part of the rooms sets: 0.5 for 0.6 kept
# their voices apart; docs/rooms.md).
NARROWBAND_SHIFT = 0.1
# A key of the file mapping one apply() call passes: True when its audio came through a narrow line.
NARROWBAND_KEY = "whisper_endpoint_narrowband"


def linked_positions(count: int, max_linked: int, seed: int = 0) -> np.ndarray:
    """Which of ``count`` embeddings (in time order) the dendrogram is built on: all of them up to
    ``max_linked``, else one drawn from each of ``max_linked`` equal stretches (seeded: the same file
    always links the same ones). Drawn, not every k-th: the embeddings come window by window, each
    window's local speakers in turn, and a fixed stride in step with them would keep one local speaker of
    every window and lose the others."""
    if count <= max_linked:
        return np.arange(count)
    edges = np.linspace(0, count, max_linked + 1).astype(np.int64)
    return edges[:-1] + np.random.default_rng(seed).integers(0, np.diff(edges))


class CappedAgglomerativeClustering(AgglomerativeClustering):
    """pyannote's ``AgglomerativeClustering`` linking at most ``max_linked`` embeddings (see the module)."""

    def __init__(self, metric: str = "cosine", max_linked: int = MAX_LINKED,
                 narrowband_shift: float = NARROWBAND_SHIFT):
        super().__init__(metric=metric)
        self.max_linked = max_linked
        self.narrowband_shift = narrowband_shift
        self._call = threading.local()  # this thread's call: one pipeline may diarize in several threads

    @property
    def threshold(self) -> float:
        """The instantiated threshold, less ``narrowband_shift`` within a narrowband file's call (pyannote's
        ``cluster`` reads it here; the hyperparameter itself stays as instantiated)."""
        chosen = self._instantiated.get("threshold", self._parameters.get("threshold"))
        return chosen - self.narrowband_shift if getattr(self._call, "narrowband", False) else chosen

    def __call__(self, *args, file=None, **kwargs):
        self._call.narrowband = bool(file and file.get(NARROWBAND_KEY))
        try:
            return super().__call__(*args, file=file, **kwargs)
        finally:
            self._call.narrowband = False

    def cluster(self, embeddings: np.ndarray, min_clusters: int | None = None, max_clusters: int | None = None,
                num_clusters: int | None = None) -> np.ndarray:
        positions = linked_positions(len(embeddings), self.max_linked)
        if len(positions) == len(embeddings):
            return super().cluster(embeddings, min_clusters=min_clusters, max_clusters=max_clusters,
                                   num_clusters=num_clusters)
        linked = embeddings[positions]  # a copy: pyannote's cluster() normalises it in place
        clusters = super().cluster(linked, min_clusters=min_clusters, max_clusters=max_clusters,
                                   num_clusters=num_clusters)
        # linked: unit length now (centroid linkage); the centroids of its clusters, every embedding to the
        # nearest. (num_embeddings, num_clusters) distances: linear in the length.
        centroids = np.stack([linked[clusters == k].mean(axis=0) for k in np.unique(clusters)])
        nearest = np.argmin(cdist(embeddings, centroids, metric=self.metric), axis=1)
        return np.unique(nearest, return_inverse=True)[1]  # numbered from 0 again, should a cluster empty
