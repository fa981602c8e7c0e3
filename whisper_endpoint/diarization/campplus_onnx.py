"""CAM++'s trunk (everything before its statistics pooling) run by ONNX Runtime, exported once per checkpoint.

The trunk is the diarizer's embedding cost (``pooled.py`` runs it once over the input, in tiles). Its
2-D and 1-D convolutions run in 0.6-0.65x the CPU time under ONNX Runtime that they take in torch on one
thread (measured on 24 s tiles), and the frames are the same to float32 rounding (``TOLERANCE``; 4e-5
was the largest difference seen, over the 13.4 min file's tiles: ``scripts.measure_onnx_trunk``).
onnxruntime is already installed for faster-whisper's VAD.

The model is exported on first use (``torch.onnx.export`` needs the ``onnx`` package) into the model
cache, named by a hash of the weights, the network code and torch's version; a copy beside the checkpoint
(an endpoint repository may carry one) is taken first. Either is checked against torch on a probe signal
before it is used. Wherever that fails (no ``onnx``, nowhere writable, an export that does not
match), the trunk stays torch's: ``load`` returns None and says why in the log.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

import numpy as np
import torch

logger = logging.getLogger(__name__)

TOLERANCE = 1e-3  # on the trunk's frames, against torch's
_PROBE_S = 3.0  # the probe signal's length (its fbank is the export's example input too)
_OPSET = 17


class TrunkSession:
    """fbank (1, 80, frames) -> trunk frames (1, channels, frames / 2), one ONNX Runtime session per
    thread count (the count torch runs with at the call: the diarizer's, threads.py)."""

    def __init__(self, path: Path):
        self.path = path
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()

    def __call__(self, fbank: torch.Tensor) -> torch.Tensor:
        session = self._session(torch.get_num_threads())
        (frames,) = session.run(None, {"fbank": fbank.detach().cpu().numpy().astype(np.float32, copy=False)})
        return torch.from_numpy(frames)

    def _session(self, threads: int):
        with self._lock:
            if threads not in self._sessions:
                self._sessions[threads] = _new_session(self.path, threads)
            return self._sessions[threads]


def load(network, checkpoint: Path, code: Path, cache_dir: str | Path | None = None) -> TrunkSession | None:
    """The trunk's ONNX session for this CAM++ ``network`` (a ``CamPlusPlusEmbedding``), or None;
    exported into ``cache_dir`` (the model cache; None: the default one) when no copy is found."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        logger.info("CAM++ runs on torch: onnxruntime is not installed")
        return None
    name = f"campplus_trunk-{_key(checkpoint, code)}.onnx"
    cache = _cache_folder(cache_dir)
    path = next((folder / name for folder in (checkpoint.parent, cache) if (folder / name).is_file()), None)
    if path is None:
        path = _export(network, cache / name)
        if path is None:
            return None
    trunk = TrunkSession(path)
    if not _matches(network, trunk):
        logger.warning("CAM++ runs on torch: %s does not give torch's frames within %g", path, TOLERANCE)
        return None
    return trunk


class _Trunk(torch.nn.Module):
    def __init__(self, campplus):
        super().__init__()
        self.head = campplus.head
        self.body = campplus.xvector[:-2]  # as pooled.Trunk: everything but "stats" and "dense"

    def forward(self, fbank):
        return self.body(self.head(fbank))


def torch_frames(network, fbank: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return _Trunk(network.campplus)(fbank)


def _probe(network) -> torch.Tensor:
    """A deterministic signal's mean-normalised fbank, (1, 80, frames): a chirp with noise."""
    rate = 16000
    t = np.arange(int(_PROBE_S * rate)) / rate
    noise = np.random.default_rng(0).standard_normal(len(t))
    samples = torch.from_numpy((0.3 * np.sin(2 * np.pi * (100 + 400 * t) * t) + 0.05 * noise).astype(np.float32))
    fbank = network.fbank(samples)
    return (fbank - fbank.mean(dim=0, keepdim=True)).T[None].contiguous()


def _matches(network, trunk: TrunkSession) -> bool:
    fbank = _probe(network)
    try:
        got = trunk(fbank)
    except Exception as exc:  # onnxruntime raises its own types for a bad or truncated file
        logger.warning("CAM++ runs on torch: %s could not run: %s", trunk.path, exc)
        return False
    expected = torch_frames(network, fbank)
    return got.shape == expected.shape and float((got - expected).abs().max()) < TOLERANCE


def _export(network, path: Path) -> Path | None:
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
    except ImportError:
        logger.info("CAM++ runs on torch: exporting it for ONNX Runtime needs the onnx package")
        return None
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with torch.inference_mode(False), torch.no_grad():
            torch.onnx.export(
                _Trunk(network.campplus).eval(), (_probe(network),), str(partial), input_names=["fbank"],
                output_names=["frames"], dynamic_axes={"fbank": {2: "frames"}, "frames": {2: "trunk_frames"}},
                opset_version=_OPSET, dynamo=False,
            )
        partial.replace(path)  # atomic: another process loading the same checkpoint sees all or nothing
    except Exception as exc:  # OSError, or the exporter's own types (torch may one day drop dynamo=False)
        partial.unlink(missing_ok=True)
        logger.warning("CAM++ runs on torch: its ONNX export to %s failed: %s: %s", path, type(exc).__name__, exc)
        return None
    logger.info("CAM++'s trunk exported for ONNX Runtime: %s", path)
    return path


def _cache_folder(cache_dir: str | Path | None) -> Path:
    """The diarization folder of the model cache: the handler's (``ModelSettings.model_cache_dir``), else
    ``MODEL_CACHE_DIR``, else ModelSettings' default ($XDG_CACHE_HOME honoured)."""
    from whisper_endpoint.core.config import ModelSettings

    cache = (cache_dir or os.environ.get("MODEL_CACHE_DIR")
             or ModelSettings.model_fields["model_cache_dir"].default_factory())
    return Path(cache) / "diarization"


def _key(checkpoint: Path, code: Path) -> str:
    """The weights, the network code and the exporter's version: a change to any makes a new export."""
    digest = hashlib.sha256()
    for path in (checkpoint, code):
        digest.update(path.read_bytes())
    digest.update(f"{torch.__version__}/{_OPSET}".encode())
    return digest.hexdigest()[:16]


def _new_session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if threads > 1:
        # Waiting threads sleep rather than spin, for the reason threads.py gives for torch's.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
