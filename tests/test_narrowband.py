"""A telephone line is told from wideband audio, and the clustering links its voices closer (issue 71:
diarization/embedded/channel.py, clustering.py)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from support import rooms_generator
from support.paths import ROOT
from whisper_endpoint.diarization.embedded import channel

pytestmark = pytest.mark.skipif(not shutil.which("sox"), reason="needs Debian's sox")
MEETING = ROOT / "audio" / "dialogues" / "flite_meeting.flac"  # three flite voices, 16 kHz
CAVE = ROOT / "audio" / "dialogues" / "fillets_cave.flac"  # two Dutch actors, 22 kHz recordings


@pytest.fixture(scope="module")
def rooms():
    pytest.importorskip("soundfile")
    return rooms_generator.load()


@pytest.mark.parametrize("path", [MEETING, CAVE])
def test_every_line_is_narrowband_and_the_studio_is_not(rooms, path, tmp_path):
    samples = rooms.sources.read(path)[0][: 20 * rooms.RATE]
    assert not channel.narrowband(samples.astype(np.float32))
    for line in ("telephone_ulaw", "telephone_alaw", "telephone_gsm"):
        assert channel.narrowband(rooms.telephone(samples, line, tmp_path).astype(np.float32)), line
    assert not channel.narrowband(np.zeros(16000, dtype=np.float32))  # silence is no line


@pytest.fixture(scope="module")
def diarizer():
    from whisper_endpoint.diarization import EMBEDDED, load_diarizer

    return load_diarizer(EMBEDDED)


@pytest.mark.slow  # its own diarizer: the fast tier's share for issue 71 is spent
def test_the_clustering_links_closer_on_a_line_only(rooms, diarizer, tmp_path):
    clustering = diarizer.pipeline.clustering
    seen, cluster = [], clustering.cluster

    def keep(*args, **kwargs):  # the real method; the threshold it reads kept
        seen.append(clustering.threshold)
        return cluster(*args, **kwargs)

    clustering.cluster = keep
    try:
        samples = rooms.sources.read(MEETING)[0][: 12 * rooms.RATE]
        diarizer.diarize(samples.astype(np.float32))
        diarizer.diarize(rooms.telephone(samples, "telephone_ulaw", tmp_path).astype(np.float32))
    finally:
        del clustering.cluster
    chosen = diarizer.pipeline.parameters(instantiated=True)["clustering"]["threshold"]
    assert seen == [chosen, pytest.approx(chosen - clustering.narrowband_shift)]
    assert clustering.threshold == chosen  # the call's shift is gone with it
