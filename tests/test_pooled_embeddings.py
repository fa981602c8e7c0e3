"""CAM++ run once over the input and pooled per mask (whisper_endpoint/diarization/pooled.py). Real weights."""

import numpy as np
import pytest
import torch

from support.audio import decode_reference
from support.paths import AUDIO
from whisper_endpoint.diarization import pyannote_quietly

RATE = 16000


@pytest.fixture(scope="module")
def trunk():
    with pyannote_quietly():
        from whisper_endpoint.diarization.campplus.pyannote_model import (
            CamPlusPlusEmbedding,
        )
        from whisper_endpoint.diarization.embedded.pooled import Trunk

    torch.set_num_threads(1)
    return Trunk(CamPlusPlusEmbedding().eval())


@pytest.fixture(scope="module")
def speech():
    return torch.from_numpy(decode_reference(AUDIO / "dialogues" / "flite_meeting.flac"))


def cosine(a, b) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_one_tile_and_a_full_mask_give_the_networks_own_embedding(trunk, speech):
    from whisper_endpoint.diarization.embedded.pooled import (
        ChunkMasks,
        Tiling,
        chunk_embeddings,
    )

    piece = speech[: 10 * RATE]
    with torch.inference_mode():
        expected = trunk.network(piece[None, None])[0].numpy()
    masks = ChunkMasks(np.ones((1, 589, 1), np.float32), step_s=1.0, window_samples=10 * RATE)
    pooled = chunk_embeddings(trunk, piece, masks, Tiling(tile_s=20, context_s=0))[0, 0]
    np.testing.assert_allclose(pooled, expected, atol=1e-5)


def test_windows_pooled_across_tiles_match_the_frames_kept_for_turns(trunk, speech):
    """Sums carried from tile to tile give what pooling the stored frames gives; silent speakers are NaN,
    and tiles that no mask needs are never computed."""
    from pyannote.core import Segment

    from whisper_endpoint.diarization.embedded.pooled import (
        ChunkMasks,
        FrameStore,
        Tiling,
        chunk_embeddings,
        trunk_frames,
    )

    piece = speech[: 30 * RATE]
    masks = np.zeros((3, 589, 2), np.float32)  # windows at 0, 10 and 20 s (step 10 s); speaker 1 silent
    masks[:2, :, 0] = 1.0  # speaker 0 talks through the first two windows only
    store = FrameStore(trunk_frames(len(piece)))
    tiling = Tiling(tile_s=4, context_s=1)
    embeddings = chunk_embeddings(trunk, piece, ChunkMasks(masks, 10.0, 10 * RATE), tiling, store)
    assert np.isnan(embeddings[:, 1]).all() and np.isnan(embeddings[2]).all()
    assert store.have[:500].all() and not store.have[-100:].any()  # the last window's tiles were skipped
    embed = store.embedder(trunk)
    for window in range(2):
        stored = embed(Segment(10 * window, 10 * window + 10))
        assert cosine(embeddings[window, 0], stored) > 0.999  # the store keeps float16 frames
    assert cosine(embeddings[0, 0], embeddings[1, 0]) < 0.99  # and the windows are not alike by construction
