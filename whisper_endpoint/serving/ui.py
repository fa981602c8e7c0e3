"""The web page: ``GET /ui`` (the page), ``GET /ui/config.json`` (what this server offers), its static
files under ``/ui/static/`` and ``GET /`` redirecting to ``/ui``. All open without an API key: the page
asks for the key itself, and the routes it calls are guarded as for any client.

The page is plain HTML, CSS and JavaScript modules (``whisper_endpoint/static/ui``, package data), with
no build step; its Content-Security-Policy lets it load and call nothing but this server, since
endpoints may be air-gapped and a page that fetched from elsewhere would break there.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, FastAPI
from starlette.responses import FileResponse, RedirectResponse
from starlette.staticfiles import StaticFiles

from whisper_endpoint.languages import language_names
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import InferenceService

STATIC = files("whisper_endpoint") / "static" / "ui"
# 'self' only: scripts, styles, the audio worklet, fetches and the WebSocket (CSP3 'self' covers ws:
# on the same host); blob: for the player and the downloads made in the page.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; connect-src 'self'; media-src 'self' blob:; "
    "img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def install(app: FastAPI, service: InferenceService, *, jobs_max_body_bytes: int | None, auth_required: bool) -> None:
    """Add the page's routes. ``jobs_max_body_bytes``: the jobs API's upload limit, None when jobs are off."""
    app.include_router(router(service, jobs_max_body_bytes=jobs_max_body_bytes, auth_required=auth_required))
    app.mount("/ui/static", StaticFiles(directory=str(STATIC)), name="ui-static")


def router(service: InferenceService, *, jobs_max_body_bytes: int | None, auth_required: bool) -> APIRouter:
    settings = service.settings
    api = APIRouter(include_in_schema=False)

    @api.get("/")
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=307)

    @api.get("/ui")
    async def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html; charset=utf-8", headers=_HEADERS)

    @api.get("/ui/config.json")
    async def config() -> JSONResult:
        """What the page may offer: null for what is known only once the model has loaded."""
        ready = service.ready
        return JSONResult({
            "ready": ready,
            "load_error": service.load_error,
            "model": service.model_id if ready else None,
            "multilingual": bool(getattr(service.handler.asr, "is_multilingual", False)) if ready else None,
            "diarization": service.diarization_available if ready else None,
            "auth_required": auth_required,
            "jobs": jobs_max_body_bytes is not None,
            "jobs_after_s": settings.ui_jobs_after_s,
            "max_body_bytes": settings.max_body_bytes,
            "jobs_max_body_bytes": jobs_max_body_bytes,
            "realtime": settings.realtime_max_sessions > 0,
            "languages": language_names(),
        }, headers={"Cache-Control": "no-cache"})

    return api
