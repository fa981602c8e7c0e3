"""The loaded ``EndpointHandler`` behind the routes: load in the background, then run requests
through the concurrency gate on worker threads, never on the event loop.

Live requests (``run``) wait for one of ``MAX_CONCURRENCY`` slots; jobs (``run_job``) have slots of
their own (the job worker runs ``JOBS_CONCURRENCY`` at once), so a live request never waits for a
job. Each decode gets a ``DecodeContext``: its deadline and, for live requests, the client's
disconnect stop it at its next window, and stop its wait for a slot too.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable

import anyio

from whisper_endpoint.adapters.errors import NotReadyError
from whisper_endpoint.adapters.http import as_endpoint_error
from whisper_endpoint.decode_context import DEADLINE, DISCONNECTED, DecodeContext, DecodeStopped
from whisper_endpoint.errors import EndpointError
from whisper_endpoint.serving.limits import InferenceGate
from whisper_endpoint.serving.metrics import Metrics
from whisper_endpoint.serving.settings import ServerSettings

logger = logging.getLogger(__name__)

Handler = Callable[[dict], dict]
# What a caller without the API key learns of a failed load: the reason may name server paths.
LOAD_FAILED = "model loading failed (see the server log)"


def load_endpoint_handler(settings: ServerSettings, decodes: int) -> Handler:
    from whisper_endpoint.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    # ``decodes`` requests and jobs decode at once, so the model gets that many workers (NUM_WORKERS wins).
    model = ModelSettings().with_workers_for(decodes)
    return EndpointHandler(path=settings.model_dir, settings=model)


class InferenceService:
    """``job_slots``: jobs decoded at once besides the live requests (0: no jobs)."""

    def __init__(
        self, settings: ServerSettings, handler: Handler | None = None, load: Callable[[], Handler] | None = None,
        *, job_slots: int = 0,
    ):
        self.settings = settings
        self.gate = InferenceGate(settings.max_concurrency, settings.max_queue)
        self.metrics = Metrics()
        self.handler = handler
        self.loaded_at = int(time.time()) if handler is not None else None
        self.load_error: str | None = None
        self._load = load or (lambda: load_endpoint_handler(settings, settings.max_concurrency + job_slots))
        self._limiter: anyio.CapacityLimiter | None = None
        self._job_limiter: anyio.CapacityLimiter | None = None
        self.job_slots = job_slots

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
            self.load_error = LOAD_FAILED
            logger.error("model loading failed", exc_info=exc)
            return
        self.handler, self.loaded_at = handler, int(time.time())
        logger.info("ready: %s loaded in %.1f s", self.model_id, time.perf_counter() - started)

    def check_ready(self, *, reveal: bool = True) -> None:
        """503 until the model is loaded; ``reveal``: the load's failure with its reason (else LOAD_FAILED)."""
        if self.load_error is not None:
            raise NotReadyError(self.load_error if reveal else LOAD_FAILED, code="model_load_failed")
        if self.handler is None:
            raise NotReadyError("the model is still loading; retry shortly", code="loading", retry_after=5)

    def context(self, timeout_s: float, setting: str, **options) -> DecodeContext:
        """A live request's decode context, made when the request arrives (its deadline counts from then)."""
        return DecodeContext(timeout_s=timeout_s or None, timeout_setting=setting, **options)

    async def run(self, payload: dict, context: DecodeContext | None = None, *, receive=None) -> dict:
        """Decode one live request: wait for a slot (429 when the queue is full), then run off the loop.

        ``receive``: the request's ASGI receive, read for the client's disconnect once the body is in.
        The deadline or a disconnect stop the wait for a slot at once, and the decode at its next window
        (``DecodeStopped``; the slot is free again when the decode has stopped).
        """
        self.check_ready()
        context = context or DecodeContext()
        remaining = context.remaining_s()
        deadline = math.inf if remaining is None else anyio.current_time() + remaining
        with anyio.CancelScope(deadline=deadline) as scope:
            watcher = asyncio.create_task(_watch_disconnect(receive, context, scope)) if receive else None
            try:
                async with self.gate.slot():
                    if self._limiter is None:
                        self._limiter = anyio.CapacityLimiter(self.settings.max_concurrency)
                    result, elapsed = await self._decode(payload, context, self._limiter)
            finally:
                if watcher is not None:
                    watcher.cancel()
        if scope.cancelled_caught:  # stopped while waiting for a slot (or right after its decode)
            raise context.stopped(context.stop_reason or DEADLINE)
        self.gate.record(elapsed)
        return result

    async def run_job(self, payload: dict, context: DecodeContext) -> dict:
        """Decode one job on a job slot (never in the live requests' queue)."""
        self.check_ready()
        if self._job_limiter is None:
            self._job_limiter = anyio.CapacityLimiter(max(1, self.job_slots))
        result, _ = await self._decode(payload, context, self._job_limiter)
        return result

    async def _decode(self, payload: dict, context: DecodeContext, limiter) -> tuple[dict, float]:
        started = time.perf_counter()
        try:
            result = await anyio.to_thread.run_sync(_call, self.handler, payload, context, limiter=limiter)
        except DecodeStopped:
            raise
        except Exception as exc:
            raise as_endpoint_error(exc) from exc
        elapsed = time.perf_counter() - started
        self.metrics.record_inference(elapsed, result.get("duration"))
        return result, elapsed


def _call(handler: Handler, payload: dict, context: DecodeContext) -> dict:
    """``handler.run(payload, context)`` where the handler has it (EndpointHandler); else ``handler(payload)``."""
    run = getattr(handler, "run", None)
    return run(payload, context) if run is not None else handler(payload)


async def _watch_disconnect(receive, context: DecodeContext, scope: anyio.CancelScope) -> None:
    """Read the connection until the client goes: then stop the request's decode (at its next window) and
    its wait for a slot. Only once the body has been read: nothing else arrives before the disconnect."""
    while (await receive())["type"] != "http.disconnect":
        pass
    context.cancel(DISCONNECTED)
    scope.cancel()
