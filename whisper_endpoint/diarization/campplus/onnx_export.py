"""A part of a diarization model run by ONNX Runtime: exported once into the model cache, checked against torch.

The export (``torch.onnx.export``, which needs the ``onnx`` package) is named by a hash of what it was made
from (the weights, the code, torch's version), so a change to any makes a new one; a copy beside the
checkpoint (an endpoint repository may carry one) is taken before the cache's. Either is run on a probe input
and compared with torch before it is used. Wherever that fails (no ``onnx``, nowhere writable, an export that
does not match), ``load`` returns None, says why in the log, and the model stays torch's.

Used for CAM++'s trunk (``onnx_trunk.py``). onnxruntime is already installed for faster-whisper's VAD.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

logger = logging.getLogger(__name__)

OPSET = 17


@dataclass(frozen=True)
class Export:
    """What to export and how to check it.

    Attributes:
      what: the part's name in log lines ("CAM++'s trunk").
      file_name: the export's file name (with its key: ``keyed_name``).
      module: builds the torch module to export (in eval mode; called only to export).
      probe: the example input of the export, and the input the check compares on.
      expected: torch's output on ``probe``.
      axes: the dynamic axes of the input and the output, as ``torch.onnx.export`` takes them.
      tolerance: the largest difference from ``expected`` the copy may make.
    """

    what: str
    file_name: str
    module: Callable[[], torch.nn.Module]
    probe: torch.Tensor
    expected: torch.Tensor
    axes: dict
    tolerance: float


class Session:
    """input -> output through ONNX Runtime, one session per thread count (the count torch runs with at
    the call: the diarizer's, core/threads.py)."""

    def __init__(self, path: Path):
        self.path = path
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        session = self._session(torch.get_num_threads())
        (output,) = session.run(None, {"input": tensor.detach().cpu().numpy().astype(np.float32, copy=False)})
        return torch.from_numpy(output)

    def _session(self, threads: int):
        with self._lock:
            if threads not in self._sessions:
                self._sessions[threads] = _new_session(self.path, threads)
            return self._sessions[threads]


def load(export: Export, beside: Path, cache_dir: str | Path | None) -> Session | None:
    """The ONNX Runtime session of ``export``: a copy in ``beside`` (the checkpoint's folder) or in the
    model cache's diarization folder (``cache_dir``; None: the default cache), exported there when
    neither has one; None when it cannot be had or does not match torch."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        logger.info("%s runs on torch: onnxruntime is not installed", export.what)
        return None
    cache = cache_folder(cache_dir)
    carried = beside / export.file_name
    if carried.is_file():
        return _checked(export, carried)
    cached = cache / export.file_name
    if cached.is_file():
        session = _checked(export, cached)
        if session is not None:
            return session
        cached.unlink(missing_ok=True)  # a broken or stale file in our own cache: exported again, once
    path = _export(export, cached)
    return None if path is None else _checked(export, path)


def keyed_name(stem: str, files: Iterable[Path], versions: str = "") -> str:
    """``stem-<key>.onnx``, the key a hash of ``files``' bytes (the weights and the code of the exported
    part), this module's (how it exports), ``versions`` and the exporter's version."""
    digest = hashlib.sha256()
    for path in (*files, Path(__file__)):
        digest.update(path.read_bytes())
    digest.update(f"{versions}/{torch.__version__}/{OPSET}".encode())
    return f"{stem}-{digest.hexdigest()[:16]}.onnx"


def cache_folder(cache_dir: str | Path | None) -> Path:
    """The diarization folder of the model cache: the handler's (``ModelSettings.model_cache_dir``), else
    ``MODEL_CACHE_DIR``, else the cache root."""
    from whisper_endpoint.core.config import cache_root

    return Path(cache_dir or os.environ.get("MODEL_CACHE_DIR") or cache_root()) / "diarization"


def _checked(export: Export, path: Path) -> Session | None:
    session = Session(path)
    if _matches(export, session):
        return session
    logger.warning("%s runs on torch: %s does not give torch's output within %g", export.what, path,
                   export.tolerance)
    return None


def _matches(export: Export, session: Session) -> bool:
    try:
        got = session(export.probe)
    except Exception as exc:  # onnxruntime raises its own types for a bad or truncated file
        logger.warning("%s runs on torch: %s could not run: %s", export.what, session.path, exc)
        return False
    expected = export.expected
    return got.shape == expected.shape and float((got - expected).abs().max()) < export.tolerance


def _export(export: Export, path: Path) -> Path | None:
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
    except ImportError:
        logger.info("%s runs on torch: exporting it for ONNX Runtime needs the onnx package", export.what)
        return None
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # eval() on the exported module itself: the exporter puts back the mode it found, on every submodule
        # (a module left in training mode runs its dropout afterwards).
        with torch.inference_mode(False), torch.no_grad():
            torch.onnx.export(
                export.module().eval(), (export.probe,), str(partial), input_names=["input"],
                output_names=["output"], dynamic_axes=export.axes, opset_version=OPSET, dynamo=False,
            )
        partial.replace(path)  # atomic: another process loading the same checkpoint sees all or nothing
    except Exception as exc:  # OSError, or the exporter's own types (torch may one day drop dynamo=False)
        partial.unlink(missing_ok=True)
        logger.warning("%s runs on torch: its ONNX export to %s failed: %s: %s", export.what, path,
                       type(exc).__name__, exc)
        return None
    logger.info("%s exported for ONNX Runtime: %s", export.what, path)
    return path


def _new_session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if threads > 1:
        # Waiting threads sleep rather than spin, for the reason core/threads.py gives for torch's.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
