"""The web page: ``GET /ui`` (the page), ``GET /ui/config.json`` (what this server offers), its static
files under ``/ui/static/`` and ``GET /`` redirecting to ``/ui``. All open without an API key: the page
asks for the key itself, and the routes it calls are guarded as for any client.

The page is plain HTML, CSS and JavaScript modules (``whisper_endpoint/static/index.html`` and the
modules in ``static/ui/``, package data), with no build step; its Content-Security-Policy lets it load
and call nothing but this server, since endpoints may be air-gapped and a page that fetched from
elsewhere would break there.
"""

from __future__ import annotations

from importlib.resources import files

import anyio
from fastapi import APIRouter, FastAPI, Request
from starlette.responses import FileResponse, RedirectResponse
from starlette.staticfiles import StaticFiles

from whisper_endpoint.core.config import MAX_CLIPS_PER_SPEAKER
from whisper_endpoint.core.languages import language_names
from whisper_endpoint.jobs import Jobs
from whisper_endpoint.serving.formats_api import DOWNLOADS
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import LOAD_FAILED, InferenceService
from whisper_endpoint.speakers.enrolment import LONGEST_CLIP_S, SHORTEST_CLIP_S

PAGE = files("whisper_endpoint") / "static" / "index.html"
ASSETS = files("whisper_endpoint") / "static" / "ui"  # scripts, styles, the audio worklet
# What POST /v1/speakers takes as clips (the rules of known_speakers): the page's "Remember this voice" cuts to them.
_CLIP_RULES = {"shortest_s": SHORTEST_CLIP_S, "longest_s": LONGEST_CLIP_S, "count": MAX_CLIPS_PER_SPEAKER}
# 'self' only: scripts, styles, the audio worklet, fetches and the WebSocket (CSP3 'self' covers ws:
# on the same host); blob: for the player and the downloads made in the page.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; connect-src 'self'; media-src 'self' blob:; "
    "img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


class _Assets(StaticFiles):
    """The page's modules, revalidated on every load (ETag): an upgraded server never runs old scripts."""

    def file_response(self, *args, **kwargs):
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def install(app: FastAPI, service: InferenceService, jobs: Jobs | None, *, auth_required: bool) -> None:
    """Add the page's routes (``jobs``: None when the jobs API is off)."""
    app.include_router(router(service, jobs, auth_required=auth_required))
    app.mount("/ui/static", _Assets(directory=str(ASSETS)), name="ui-static")


def router(service: InferenceService, jobs: Jobs | None, *, auth_required: bool) -> APIRouter:
    settings = service.settings
    api = APIRouter(include_in_schema=False)

    @api.get("/")
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=307)

    @api.get("/ui")
    async def page() -> FileResponse:
        return FileResponse(str(PAGE), media_type="text/html; charset=utf-8", headers=_HEADERS)

    @api.get("/ui/config.json")
    async def config(request: Request) -> JSONResult:
        """What the page may offer: null for what is known only once the model has loaded."""
        ready = service.ready
        asr = getattr(service.handler, "asr", None)
        load_error = service.load_error
        if load_error is not None and not request.app.state.api_keys.authorized(request):
            load_error = LOAD_FAILED  # the reason may name server paths: only with the key
        return JSONResult({
            "ready": ready,
            "load_error": load_error,
            "model": service.model_id if ready else None,
            "multilingual": bool(getattr(asr, "is_multilingual", False)) if ready else None,
            "diarization": service.diarization_available if ready else None,
            "auth_required": auth_required,
            # A job store that could not be opened answers every /jobs request with 503.
            "jobs": jobs is not None and jobs.unavailable is None,
            "jobs_after_s": settings.ui_jobs_after_s,
            "max_body_bytes": settings.max_body_bytes,
            "jobs_max_body_bytes": jobs.settings.max_body_bytes if jobs is not None else None,
            "realtime": settings.realtime_max_sessions > 0,
            "speaker_library": _CLIP_RULES if service.library is not None else None,
            "downloads": list(DOWNLOADS),
            "languages": await anyio.to_thread.run_sync(language_names),  # 2.8 s the first time: off the loop
        }, headers={"Cache-Control": "no-cache"})

    return api
