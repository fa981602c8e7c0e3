"""One file through the handler, exactly as the server decodes it, and its outcome.

Shared by the single-process loop and the Ray workers, so both modes write the same files.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from whisper_endpoint.batch.inputs import Item
from whisper_endpoint.batch.outputs import error_path, result_path, write_failure, write_results
from whisper_endpoint.core.errors import EndpointError

logger = logging.getLogger(__name__)

Handler = Callable[[dict], dict]


@dataclass
class Outcome:
    relative: str
    status: str  # done | failed | skipped
    audio_s: float = 0.0
    wall_s: float = 0.0
    error: str | None = None

    def as_row(self) -> dict:
        return asdict(self)


def pending(item: Item, out_dir: Path, retry_failed: bool) -> bool:
    """Work left for this file: no result yet, and no recorded failure unless retrying failures."""
    if result_path(out_dir, item.relative).exists():
        return False
    return retry_failed or not error_path(out_dir, item.relative).exists()


def transcribe_file(handler: Handler, item: Item, out_dir: Path, formats: list[str], parameters: dict) -> Outcome:
    """Decode one file and write its results; any failure is recorded next to them, never raised."""
    started = time.perf_counter()
    try:
        with open(item.path, "rb") as file:
            data = file.read()
        result = handler({"inputs": data, "parameters": dict(parameters)})
        write_results(out_dir, item.relative, result, formats, parameters)
    except (OSError, EndpointError) as exc:
        return _failed(item, out_dir, exc, started)
    except Exception as exc:  # a bug or a model failure: recorded with its type, the batch goes on
        logger.exception("unexpected error on %s", item.path)
        return _failed(item, out_dir, exc, started)
    return Outcome(item.relative, "done", float(result.get("duration") or 0.0), time.perf_counter() - started)


def _failed(item: Item, out_dir: Path, exc: BaseException, started: float) -> Outcome:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    error = {"error": message, "type": type(exc).__name__}
    if isinstance(exc, EndpointError):
        error.update(code=exc.code, status=exc.status)
    write_failure(out_dir, item.relative, item.path, error)
    return Outcome(item.relative, "failed", 0.0, time.perf_counter() - started, message)
