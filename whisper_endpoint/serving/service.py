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

from whisper_endpoint.adapters.errors import NotReadyError, with_param
from whisper_endpoint.adapters.http import as_endpoint_error
from whisper_endpoint.core.decode_context import (
    DEADLINE,
    DISCONNECTED,
    DecodeContext,
    DecodeStopped,
)
from whisper_endpoint.serving.limits import InferenceGate
from whisper_endpoint.serving.metrics import Metrics
from whisper_endpoint.serving.model_pool import (
    ModelEntry,
    ModelPool,
    UnknownModelError,
    parse_models,
)
from whisper_endpoint.serving.settings import ServerSettings

logger = logging.getLogger(__name__)

Handler = Callable[[dict], dict]
# What a caller without the API key learns of a failed load: the reason may name server paths.
LOAD_FAILED = "model loading failed (see the server log)"


class HandlerLoader:
    """Makes the handler of one ``ASR_MODELS`` entry: the server's settings with that entry's model, one
    CTranslate2 worker per concurrent decode (NUM_WORKERS wins), the diarization loaded once and shared."""

    def __init__(self, settings: ServerSettings, decodes: int, open_library: Callable | None = None):
        self.settings, self.decodes = settings, decodes
        self.open_library = open_library  # (diarizer, SPEAKERS_DIR's voices) -> the speaker library or None
        self._speakers = None  # the first handler: its diarizer, known voices and library are shared by the others

    def __call__(self, entry: ModelEntry) -> Handler:
        from whisper_endpoint.core.config import ModelSettings
        from whisper_endpoint.handler import EndpointHandler

        model = ModelSettings(**entry.settings_update())
        handler = EndpointHandler(path=self.settings.model_dir, settings=model.with_workers_for(self.decodes),
                                  speakers_from=self._speakers, open_library=self.open_library)
        self._speakers = self._speakers or handler
        return handler

    @property
    def library(self):
        return self._speakers.speakers.library if self._speakers is not None else None


def model_entries(settings: ServerSettings) -> list[ModelEntry]:
    """ASR_MODELS, or ASR_MODEL alone as a list of one."""
    if settings.asr_models:
        return parse_models(settings.asr_models)
    from whisper_endpoint.core.config import ModelSettings

    reference = ModelSettings().asr_model
    return [ModelEntry(name=reference, reference=reference)]


class InferenceService:
    """``job_slots``: jobs decoded at once besides the live requests (0: no jobs). ``handler``: one model
    already loaded (tests share one); ``load``: makes the one model instead of ``ASR_MODEL``'s."""

    def __init__(
        self, settings: ServerSettings, handler: Handler | None = None, load: Callable[[], Handler] | None = None,
        *, job_slots: int = 0, library=None, open_library: Callable | None = None,
    ):
        self.settings = settings
        self.gate = InferenceGate(settings.max_concurrency, settings.max_queue)
        self.metrics = Metrics()
        self.loaded_at = int(time.time()) if handler is not None else None
        self.load_error: str | None = None
        if handler is not None or load is not None:  # one given model, named as its backend names it
            name = _model_name(handler) if handler is not None else "whisper"
            entries, loader = [ModelEntry(name=name, reference=name)], (lambda entry: load())
        else:
            entries, loader = model_entries(settings), HandlerLoader(settings, settings.max_concurrency + job_slots,
                                                                     open_library)
        self._library, self._loader = library, loader  # the speaker library: given, or opened by the loader
        self.pool = ModelPool(
            entries, loader, pinned=settings.preload_models, max_loaded=settings.max_loaded_models,
            idle_unload_s=settings.model_idle_unload_s, preloaded={entries[0].name: handler} if handler else None)
        self._stop_sweeper = threading.Event()
        self._limiter: anyio.CapacityLimiter | None = None
        self._job_limiter: anyio.CapacityLimiter | None = None
        self.job_slots = job_slots

    @property
    def handler(self) -> Handler | None:
        """The default model's handler, once loaded."""
        return self.pool.handler_if_loaded(self.pool.default)

    @property
    def library(self):
        """The speaker library (speakers.library.VoiceLibrary), once the diarizer is loaded; None when not served."""
        return self._library or getattr(self._loader, "library", None)

    @property
    def ready(self) -> bool:
        return self.handler is not None

    @property
    def model_id(self) -> str:
        """The default model's name (``embedded:tiny.en``, a Hub id, a directory, or its ASR_MODELS name)."""
        if self.settings.asr_models:
            return self.pool.default
        return _model_name(self.handler) if self.handler is not None else self.pool.default

    @property
    def diarization_available(self) -> bool:
        return getattr(self.handler, "diarizer", None) is not None

    def start_loading(self) -> None:
        """Load the pinned models (the default first) in the background; unload idle ones from then on."""
        if self.load_error is None:
            threading.Thread(target=self._load_now, name="model-loader", daemon=True).start()
        self.pool.start_idle_sweeper(self._stop_sweeper)

    def stop(self) -> None:
        self._stop_sweeper.set()

    def _load_now(self) -> None:
        started = time.perf_counter()
        try:
            self.pool.load_pinned()
        except NotReadyError as exc:  # the pool logged the cause; clients get its message only
            self.load_error = exc.message
            return
        self.loaded_at = self.loaded_at or int(time.time())
        logger.info("ready: %s loaded in %.1f s", self.model_id, time.perf_counter() - started)

    def check_ready(self, *, reveal: bool = True) -> None:
        """503 until the model is loaded; ``reveal``: the load's failure with its reason (else LOAD_FAILED)."""
        if self.load_error is not None:
            raise NotReadyError(self.load_error if reveal else LOAD_FAILED, code="model_load_failed")
        if self.handler is None:
            raise NotReadyError("the model is still loading; retry shortly", code="loading", retry_after=5)

    def context(self, timeout_s: float, setting: str, **options) -> DecodeContext:
        """A live request's decode context, made when the request arrives (its deadline counts from then);
        ``options`` go to DecodeContext (the request's ``tenant``, say)."""
        return DecodeContext(timeout_s=timeout_s or None, timeout_setting=setting, **options)

    async def run(self, payload: dict, context: DecodeContext | None = None, *, receive=None) -> dict:
        """Decode one live request: wait for a slot (429 when the queue is full), then run off the loop.

        ``receive``: the request's ASGI receive, read for the client's disconnect once the body is in.
        The deadline or a disconnect stop the wait for a slot at once, and the decode at its next window
        (``DecodeStopped``; the slot is free again when the decode has stopped).
        """
        self.check_ready()
        payload, model = self._chosen_model(payload)
        context = context or DecodeContext()
        remaining = context.remaining_s()
        deadline = math.inf if remaining is None else anyio.current_time() + remaining
        with anyio.CancelScope(deadline=deadline) as scope:
            watcher = asyncio.create_task(_watch_disconnect(receive, context, scope)) if receive else None
            try:
                async with self.gate.slot():
                    if self._limiter is None:
                        self._limiter = anyio.CapacityLimiter(self.settings.max_concurrency)
                    (result, _), elapsed = await self._decode(payload, context, self._limiter, model)
            finally:
                if watcher is not None:
                    watcher.cancel()
        if scope.cancelled_caught:  # stopped while waiting for a slot (or right after its decode)
            raise context.stopped(context.stop_reason or DEADLINE)
        self.gate.record(elapsed)
        return result

    async def run_job(self, payload: dict, context: DecodeContext) -> tuple[dict, dict]:
        """Decode one job on a job slot (never in the live requests' queue): its result, and the voices its
        speakers were found with when ``context`` keeps them (label -> centroid; else empty)."""
        self.check_ready()
        payload, model = self._chosen_model(payload)
        if self._job_limiter is None:
            self._job_limiter = anyio.CapacityLimiter(max(1, self.job_slots))
        answer, _ = await self._decode(payload, context, self._job_limiter, model)
        return answer

    def _chosen_model(self, payload: dict) -> tuple[dict, str]:
        """The payload without its ``parameters.model``, and the configured name it means (404 if none)."""
        parameters = payload.get("parameters") if isinstance(payload, dict) else None
        if not isinstance(parameters, dict) or "model" not in parameters:
            return payload, self.pool.default
        requested = parameters["model"]
        try:
            name = self.pool.resolve(requested if isinstance(requested, str) else repr(requested))
        except UnknownModelError as exc:
            raise with_param(exc, "model") from None
        rest = {key: value for key, value in parameters.items() if key != "model"}
        return {**payload, "parameters": rest}, name

    async def _decode(self, payload: dict, context: DecodeContext, limiter,
                      model: str) -> tuple[tuple[dict, dict], float]:
        started = time.perf_counter()
        try:
            result, voices = await anyio.to_thread.run_sync(_call, self.pool, model, payload, context,
                                                            limiter=limiter)
        except DecodeStopped:
            raise
        except Exception as exc:
            raise as_endpoint_error(exc) from exc
        elapsed = time.perf_counter() - started
        self.metrics.record_inference(elapsed, result.get("duration"))
        return (result, voices), elapsed


def _call(pool: ModelPool, model: str, payload: dict, context: DecodeContext) -> tuple[dict, dict]:
    """The model's ``handler.answer(payload, context)`` where it has one (EndpointHandler): the response and
    the voices found; else ``handler.run(payload, context)`` or ``handler(payload)``, and no voices. The
    model stays loaded while it decodes (loaded first if it is not)."""
    with pool.using(model) as handler:
        answer, run = getattr(handler, "answer", None), getattr(handler, "run", None)
        if answer is not None:
            found = answer(payload, context)
            return found.body, found.voices
        return (run(payload, context) if run is not None else handler(payload)), {}


def _model_name(handler) -> str:
    return getattr(getattr(handler, "asr", None), "model_name", None) or "whisper"


async def _watch_disconnect(receive, context: DecodeContext, scope: anyio.CancelScope) -> None:
    """Read the connection until the client goes: then stop the request's decode (at its next window) and
    its wait for a slot. Only once the body has been read: nothing else arrives before the disconnect."""
    while (await receive())["type"] != "http.disconnect":
        pass
    context.cancel(DISCONNECTED)
    scope.cancel()
