"""The loaded ``EndpointHandler`` behind the routes: load in the background, then run requests
through the concurrency gate on worker threads, never on the event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import anyio

from whisper_endpoint.adapters.errors import NotReadyError
from whisper_endpoint.adapters.http import as_endpoint_error
from whisper_endpoint.errors import EndpointError
from whisper_endpoint.serving.limits import InferenceGate
from whisper_endpoint.serving.metrics import Metrics
from whisper_endpoint.serving.settings import ServerSettings

logger = logging.getLogger(__name__)

Handler = Callable[[dict], dict]


def load_endpoint_handler(settings: ServerSettings) -> Handler:
    from whisper_endpoint.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    # MAX_CONCURRENCY requests decode at once, so the model gets that many workers (NUM_WORKERS wins).
    model = ModelSettings().with_workers_for(settings.max_concurrency)
    return EndpointHandler(path=settings.model_dir, settings=model)


class InferenceService:
    def __init__(
        self, settings: ServerSettings, handler: Handler | None = None, load: Callable[[], Handler] | None = None
    ):
        self.settings = settings
        self.gate = InferenceGate(settings.max_concurrency, settings.max_queue)
        self.metrics = Metrics()
        self.handler = handler
        self.loaded_at = int(time.time()) if handler is not None else None
        self.load_error: str | None = None
        self._load = load or (lambda: load_endpoint_handler(settings))
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def ready(self) -> bool:
        return self.handler is not None

    @property
    def model_id(self) -> str:
        """The served model's name (``embedded:tiny.en``, a Hub id, a directory)."""
        backend = getattr(self.handler, "asr", None)
        return getattr(backend, "model_name", None) or "whisper"

    @property
    def diarization_available(self) -> bool:
        return getattr(self.handler, "diarizer", None) is not None

    def start_loading(self) -> None:
        if self.handler is None and self.load_error is None:
            threading.Thread(target=self._load_now, name="model-loader", daemon=True).start()

    def _load_now(self) -> None:
        started = time.perf_counter()
        try:
            handler = self._load()
        except EndpointError as exc:
            self.load_error = exc.message
            logger.error("model loading failed: %s", exc.message)
            return
        except Exception as exc:  # the traceback is for the operator's log, not for clients
            self.load_error = "model loading failed (see the server log)"
            logger.error("model loading failed", exc_info=exc)
            return
        self.handler, self.loaded_at = handler, int(time.time())
        logger.info("ready: %s loaded in %.1f s", self.model_id, time.perf_counter() - started)

    def check_ready(self) -> None:
        if self.load_error is not None:
            raise NotReadyError(self.load_error, code="model_load_failed")
        if self.handler is None:
            raise NotReadyError("the model is still loading; retry shortly", code="loading", retry_after=5)

    async def run(self, payload: dict) -> dict:
        """Decode one request: wait for a slot (429 when the queue is full), then run off the loop."""
        self.check_ready()
        async with self.gate.slot():
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(self.settings.max_concurrency)
            started = time.perf_counter()
            try:
                result = await anyio.to_thread.run_sync(self.handler, payload, limiter=self._limiter)
            except Exception as exc:
                raise as_endpoint_error(exc) from exc
            elapsed = time.perf_counter() - started
        self.gate.record(elapsed)
        self.metrics.record_inference(elapsed, result.get("duration"))
        return result
