"""CAM++'s trunk on ONNX Runtime gives torch's frames, and the pipeline uses it where it can.

Real CAM++ weights, real audio. The tolerance on the trunk's frames is onnx_trunk.TOLERANCE (1e-3;
4e-5 was the largest difference seen, on frames of up to 7.7); the pooled embeddings built from them
must point the same way (cosine at least 0.9999).
"""

import numpy as np
import pytest
import torch

from support.audio import decode_reference
from support.paths import AUDIO

# slow: CAM++ exported and compared with torch
pytestmark = pytest.mark.slow

RATE = 16000


@pytest.fixture(scope="module")
def network():
    from whisper_endpoint.diarization.campplus.pyannote_model import (
        CamPlusPlusEmbedding,
    )

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield CamPlusPlusEmbedding().eval()
    torch.set_num_threads(before)


def _fbank(network, samples: np.ndarray) -> torch.Tensor:
    fbank = network.fbank(torch.from_numpy(samples))
    return (fbank - fbank.mean(dim=0, keepdim=True)).T[None].contiguous()


@pytest.mark.parametrize("seconds", [24.0, 7.33])  # a whole tile with its context; a short, odd length
def test_trunk_frames_equal_torch(network, seconds):
    from whisper_endpoint.diarization.campplus import onnx_trunk

    assert network.onnx_trunk is not None
    samples = decode_reference(AUDIO / "dialogues" / "fillets_cave.flac")[5 * RATE: 5 * RATE + round(seconds * RATE)]
    fbank = _fbank(network, samples)
    got = network.onnx_trunk(fbank)
    expected = onnx_trunk.torch_frames(network, fbank)
    assert got.shape == expected.shape
    assert float((got - expected).abs().max()) < onnx_trunk.TOLERANCE


def test_pooled_embeddings_point_the_same_way(network):
    from whisper_endpoint.diarization.embedded import pooled

    samples = torch.from_numpy(decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: 30 * RATE])
    masks = np.zeros((3, 589, 2), dtype=np.float32)
    masks[:, 100:400, 0], masks[:, 300:589, 1] = 1.0, 1.0
    chunk_masks = pooled.ChunkMasks(masks, 10.0, 10 * RATE)
    trunk = pooled.Trunk(network)
    session, embeddings = network.onnx_trunk, {}
    try:
        for name, runner in (("onnx", session), ("torch", None)):
            network.onnx_trunk = runner
            embeddings[name] = pooled.chunk_embeddings(trunk, samples, chunk_masks, pooled.Tiling()).reshape(-1, 192)
    finally:
        network.onnx_trunk = session
    a, b = embeddings["onnx"], embeddings["torch"]
    cosine = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosine.min() > 0.9999


def test_torch_without_the_export(tmp_path, monkeypatch, network):
    """No ``onnx`` package and no export yet: the trunk stays torch's (the fallback), and says so."""
    import builtins

    from whisper_endpoint.diarization.campplus import onnx_trunk

    checkpoint, code = tmp_path / "weights.pt", tmp_path / "camplusplus.py"
    checkpoint.write_bytes(b"other weights")
    code.write_text("# other code\n")
    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path / "cache"))
    real_import = builtins.__import__

    def no_onnx(name, *args, **kwargs):
        if name == "onnx":
            raise ImportError("no onnx")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnx)
    assert onnx_trunk.load(network, checkpoint, code) is None
    assert not list(tmp_path.rglob("*.onnx"))


def _another_networks_export(path):
    wrong = torch.nn.Sequential(torch.nn.Conv1d(80, 512, 3, stride=2, padding=1))
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(wrong, (torch.zeros(1, 80, 300),), str(path), input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {2: "n"}, "output": {2: "m"}}, dynamo=False)


def _keyed_files(folder):
    checkpoint, code = folder / "weights.pt", folder / "camplusplus.py"
    checkpoint.write_bytes(b"other weights")
    code.write_text("# other code\n")
    return checkpoint, code


def test_an_export_that_differs_is_not_used(tmp_path, monkeypatch, network):
    """A file beside the checkpoint that does not give torch's frames (another network's) is refused."""
    from whisper_endpoint.diarization.campplus import onnx_trunk

    checkpoint, code = _keyed_files(tmp_path)
    _another_networks_export(tmp_path / onnx_trunk.file_name(checkpoint, code))
    assert onnx_trunk.load(network, checkpoint, code, tmp_path / "cache") is None


def test_a_stale_export_in_the_cache_is_made_again(tmp_path, network):
    """A file in the model cache that does not match is exported again (else torch for good)."""
    from whisper_endpoint.diarization.campplus import onnx_trunk

    checkpoint, code = _keyed_files(tmp_path)
    stale = tmp_path / "cache" / "diarization" / onnx_trunk.file_name(checkpoint, code)
    _another_networks_export(stale)
    session = onnx_trunk.load(network, checkpoint, code, tmp_path / "cache")
    assert session is not None and session.path == stale


def test_the_export_goes_into_the_handlers_model_cache(tmp_path, monkeypatch):
    """``ModelSettings.model_cache_dir`` reaches the CAM++ export through load_diarizer, not only MODEL_CACHE_DIR
    (a caller that builds its settings in code got its export in the default cache), and the embedded
    pipeline segments with the shared first layer."""
    from whisper_endpoint.diarization import load_diarizer
    from whisper_endpoint.diarization.embedded.shared_sincnet import SharedSincInference

    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path / "environment"))
    pipeline = load_diarizer("embedded", device="cpu", cache_dir=tmp_path / "settings", threads=1).pipeline
    segmentation = pipeline._segmentation
    assert isinstance(segmentation, SharedSincInference)
    assert segmentation.step == pytest.approx(1.0) and segmentation.batch_size == 4
    trunk = pipeline.embedding_network.onnx_trunk
    assert trunk is not None
    assert trunk.path.parent == tmp_path / "settings" / "diarization"
    assert not (tmp_path / "environment").exists()
