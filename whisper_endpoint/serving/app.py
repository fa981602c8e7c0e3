"""``create_app(settings, handler)``: one FastAPI app for custom containers, SageMaker and OpenAI
clients, around the same ``EndpointHandler``.

Routes: ``POST /`` and ``/predict`` (toolkit payloads), ``GET /health``, ``GET /metrics``,
``GET /ping`` and ``POST /invocations`` (SageMaker), ``POST /v1/audio/transcriptions``,
``/v1/audio/translations`` and ``GET /v1/models`` (OpenAI), ``POST /jobs``, ``GET``/``DELETE /jobs/{id}``
(async jobs, docs/batch_and_jobs.md), ``GET /v1/realtime`` (a WebSocket: live transcription) and
``POST /v1/realtime/client_secrets``, ``POST /formats/{name}`` (a transcript as txt, srt, vtt or tsv),
``/v1/speakers`` (the speaker library, docs/speaker_library.md) and the web page (``GET /ui``, ``GET /``
redirects there). docs/serving.md has the details.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI
from starlette.responses import Response

from whisper_endpoint.jobs import Jobs, JobSettings
from whisper_endpoint.serving import (
    auth,
    error_handlers,
    formats_api,
    jobs_api,
    openai_api,
    realtime,
    redaction,
    speakers_api,
    toolkit,
    ui,
)
from whisper_endpoint.serving.metrics import CONTENT_TYPE, ResponseCounter
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import Handler, InferenceService
from whisper_endpoint.serving.settings import ServerSettings
from whisper_endpoint.speakers.library.opening import open_library
from whisper_endpoint.speakers.library.settings import LibrarySettings

logger = logging.getLogger(__name__)


def create_app(
    settings: ServerSettings | None = None,
    handler: Handler | None = None,
    *,
    load: Callable[[], Handler] | None = None,
    job_settings: JobSettings | None = None,
    library_settings: LibrarySettings | None = None,
) -> FastAPI:
    """Build the app. ``handler``: an already loaded handler (tests share one); without it the app
    loads ``EndpointHandler(settings.model_dir)`` in the background at start-up (``load`` replaces
    that loader), and answers 503 on /health, /ping and the inference routes until it is ready.
    ``job_settings``: the async jobs' (default: from JOBS_* variables; JOBS_ENABLED=false drops /jobs).
    ``library_settings``: the speaker library's (default: from SPEAKERS_* variables; serving/speakers_api.py).
    """
    settings = settings or ServerSettings()
    job_settings = job_settings or JobSettings()
    job_slots = job_settings.concurrency if job_settings.enabled else 0
    opener = partial(open_library, library_settings or LibrarySettings(), job_settings.db)
    handler, library = speakers_api.with_library(handler, opener)
    service = InferenceService(settings, handler, load, job_slots=job_slots, library=library, open_library=opener)
    jobs = Jobs(job_settings, service, secrets=redaction) if job_settings.enabled else None
    api_keys = [key.get_secret_value() for key in settings.all_keys()]
    redaction.install([*redaction.environment_secrets(), *_handler_secrets(handler), *api_keys,
                       *job_settings.secrets()])

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        service.start_loading()
        if jobs is not None:
            await jobs.start()
        yield
        if jobs is not None:
            await jobs.stop()  # a job still decoding stops at its next window and is queued again
        service.stop()
        if service.library is not None:
            service.library.close()
        # Shutdown: uvicorn has stopped accepting connections and waited (up to
        # GRACEFUL_TIMEOUT_S) for in-flight and queued requests before it gets here.
        logger.info("stopped after %d decodes", service.metrics.inferences)

    app = FastAPI(
        title="whisper-endpoint",
        summary="Whisper ASR (+ diarization): toolkit, SageMaker and OpenAI-compatible routes",
        lifespan=lifespan,
        default_response_class=JSONResult,
    )
    app.state.service = service
    error_handlers.install(app)
    app.add_middleware(ResponseCounter, metrics=service.metrics)

    # API keys (API_KEYS) guard the inference routes only: health checks and metrics stay open to the
    # platform's probes.
    # Also on app.state: routes that read their body themselves check the key before reading it.
    app.state.api_keys = auth.APIKeys.from_settings(settings)
    protected: list = auth.dependencies(app.state.api_keys)
    app.include_router(toolkit.health_router(service, app.state.api_keys))
    app.include_router(toolkit.inference_router(service), dependencies=protected)
    app.include_router(openai_api.router(service), dependencies=protected)
    if jobs is not None:
        app.include_router(jobs_api.router(service, jobs), dependencies=protected)
    app.include_router(formats_api.router(service), dependencies=protected)
    app.include_router(speakers_api.router(service, jobs), dependencies=protected)
    if settings.realtime_max_sessions:  # the WebSocket checks keys itself: it also takes them as a subprotocol
        app.include_router(realtime.router(service, app.state.api_keys, protected))
    if settings.ui_enabled:  # the page asks for the key itself; what it calls is guarded as above
        ui.install(app, service, jobs, auth_required=bool(app.state.api_keys))

    @app.get("/metrics", summary="Queue depth, in-flight requests and totals (Prometheus text format)")
    async def metrics() -> Response:
        return Response(service.metrics.render(service.gate, service.ready, service.pool.stats()),
                        media_type=CONTENT_TYPE)

    return app


def _handler_secrets(handler) -> list[str]:
    token = getattr(getattr(handler, "settings", None), "hf_token", None)
    return [token.get_secret_value()] if token is not None else []
