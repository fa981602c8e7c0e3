"""The global clustering links a bounded number of embeddings (diarization/embedded/clustering.py, issue 62):
the same speakers as linking them all, in memory linear in the recording's length."""

import tracemalloc

import numpy as np
import pytest
from pyannote.audio.pipelines import clustering as pyannote_clustering

from support.audio import decode_reference
from support.paths import AUDIO
from whisper_endpoint.diarization.embedded.clustering import linked_positions

MEETING = AUDIO / "dialogues" / "flite_meeting.flac"  # 35 s, three voices


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labellings group the items alike (whatever the numbers)."""
    return len(set(zip(a.tolist(), b.tolist()))) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.fixture(scope="module")
def diarized():
    """The embedded diarizer, and the real CAM++ embeddings its clustering took on the meeting."""
    from whisper_endpoint.diarization import EMBEDDED, load_diarizer

    diarizer = load_diarizer(EMBEDDED)
    clustering, taken = diarizer.pipeline.clustering, []
    cluster = clustering.cluster

    def keep(embeddings, *args, **kwargs):  # the real method, its input kept
        taken.append(embeddings.copy())
        return cluster(embeddings, *args, **kwargs)

    clustering.cluster = keep
    found = diarizer.diarize(decode_reference(MEETING))
    del clustering.cluster
    return diarizer, taken[0], found


def test_below_the_cap_pyannote_s_own_clustering_runs(diarized):
    diarizer, embeddings, found = diarized
    assert len(embeddings) <= diarizer.pipeline.clustering.max_linked  # the short file is not capped
    assert len(found.speakers) == 3
    mine = diarizer.pipeline.clustering.cluster(embeddings.copy(), min_clusters=1, max_clusters=len(embeddings))
    theirs = super(type(diarizer.pipeline.clustering), diarizer.pipeline.clustering).cluster(
        embeddings.copy(), min_clusters=1, max_clusters=len(embeddings))
    assert np.array_equal(mine, theirs)  # bit for bit: pyannote's result


def test_a_tiny_cap_finds_the_same_speakers(diarized, monkeypatch):
    diarizer, embeddings, _ = diarized
    clustering = diarizer.pipeline.clustering
    uncapped = clustering.cluster(embeddings.copy(), min_clusters=1, max_clusters=len(embeddings))
    cap = len(embeddings) // 2
    linked = []
    linkage = pyannote_clustering.linkage
    monkeypatch.setattr(pyannote_clustering, "linkage", lambda x, *a, **k: linked.append(len(x)) or linkage(x, *a, **k))
    monkeypatch.setattr(clustering, "max_linked", cap)
    capped = clustering.cluster(embeddings.copy(), min_clusters=1, max_clusters=len(embeddings))
    assert linked == [cap] and len(capped) == len(embeddings)
    assert len(set(uncapped.tolist())) == 3 and _same_partition(capped, uncapped)


def test_memory_stays_linear_above_the_cap(diarized, monkeypatch):
    """4,000 embeddings (the meeting's, repeated with a little noise): linking them all would hold 61 MiB of
    distances; capped at 300, the clustering's peak stays within a few copies of the embeddings."""
    diarizer, embeddings, _ = diarized
    clustering = diarizer.pipeline.clustering
    rng = np.random.default_rng(0)
    many = np.resize(embeddings, (4000, embeddings.shape[1]))
    many = (many + 0.01 * rng.standard_normal(many.shape) * np.abs(many).mean()).astype(embeddings.dtype)
    monkeypatch.setattr(clustering, "max_linked", 300)
    tracemalloc.start()
    try:
        labels = clustering.cluster(many, min_clusters=1, max_clusters=len(many))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(set(labels.tolist())) == 3
    assert peak < 6 * many.size * 8 < len(many) ** 2 * 4  # linear (float64 copies), far under N^2/2 doubles


def test_the_linked_embeddings_span_the_recording_evenly():
    assert np.array_equal(linked_positions(5, 10), np.arange(5))
    positions = linked_positions(10_000, 3000)
    assert len(positions) == 3000 and np.all(np.diff(positions) > 0) and positions[-1] < 10_000
    assert positions[0] < 4 and np.diff(positions).max() < 2 * 10_000 / 3000  # one in each stretch of 3-4
    assert np.array_equal(positions, linked_positions(10_000, 3000))  # the same file links the same ones
