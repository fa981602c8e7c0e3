"""Async jobs over HTTP: ``POST /jobs`` (202 + id), ``GET /jobs/{id}`` (status, then the result),
``DELETE /jobs/{id}`` (a running job's decode stops at its next window).

The body is what ``POST /predict`` takes (the audio file, or the JSON payload), parameters in the
query string; ``callback_url`` (query) or ``X-Callback-Url`` (header) asks for a POST of the outcome
when the job ends. The upload streams to disk under ``JOBS_MAX_BODY_BYTES`` and the body timeout,
and is checked (content type, JSON, parameters) before the 202, so a job fails later only for what
decoding finds. The server's error mapping and the API-key dependency apply as on every route.
Disk and SQLite work runs on threads: the event loop keeps answering meanwhile. A job is its key's
tenant's: another tenant's key gets a 404 for it (core/tenants.py).
"""

from __future__ import annotations

from pathlib import Path

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from whisper_endpoint.adapters.errors import NotFoundError, NotReadyError, with_param
from whisper_endpoint.adapters.payloads import is_json, text_parameters, toolkit_payload
from whisper_endpoint.adapters.raw_audio import declared_type
from whisper_endpoint.core.errors import EmptyAudioError, InvalidParameterError
from whisper_endpoint.jobs import stored
from whisper_endpoint.jobs.callbacks import url_problem
from whisper_endpoint.jobs.store import RUNNING
from whisper_endpoint.jobs.uploads import WRITE_BYTES, DiskBudget, UploadWriter
from whisper_endpoint.jobs.worker import Jobs
from whisper_endpoint.serving import auth
from whisper_endpoint.serving.limits import limited_stream
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import InferenceService


def router(service: InferenceService, jobs: Jobs) -> APIRouter:
    router = APIRouter()

    @router.post("/jobs", status_code=202, summary="Submit audio for later: 202 with the job's id and URL")
    async def submit(request: Request) -> JSONResult:
        _check_available(service, jobs)
        pairs = [(k, v) for k, v in request.query_params.items() if k != "callback_url"]
        callback = _callback_url(request.query_params.get("callback_url") or request.headers.get("x-callback-url"),
                                 allow_internal=jobs.settings.callback_allow_internal)
        kind = declared_type(request.headers.get("content-type"))  # G.711's rate kept: the job decodes by it
        parameters = text_parameters(pairs)
        if not is_json(kind):
            toolkit_payload(b"", kind, parameters)  # 415 for a content type no route takes
        # JSON is parsed into objects (memory several times its size): its own, smaller limit.
        limit, setting = ((jobs.settings.max_json_body_bytes, "JOBS_MAX_JSON_BODY_BYTES") if is_json(kind) else
                          (jobs.settings.max_body_bytes, "JOBS_MAX_BODY_BYTES"))
        job_id, path = jobs.new_upload()
        jobs.deliveries.hold_secrets(job_id, callback)  # masked in the logs from here on
        taken = 0  # of JOBS_MAX_DISK_BYTES
        try:
            async with jobs.admitted():  # a place in JOBS_MAX_QUEUED from before the upload to its row
                taken = await _receive(request, path, limit, service.settings.body_timeout_s, setting, jobs.disk)
                kind, parameters = await anyio.to_thread.run_sync(stored.store, path, kind, parameters)
                size = await anyio.to_thread.run_sync(lambda: path.stat().st_size)  # rewritten: smaller
                jobs.disk.give(taken - size)
                taken = size
                job = await anyio.to_thread.run_sync(jobs.store.add, job_id, kind, parameters, str(path), callback,
                                                     auth.tenant(request).id)
        except BaseException:
            jobs.deliveries.forget(job_id)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))
                jobs.disk.give(taken)
            raise
        jobs.submitted()
        url = f"/jobs/{job.id}"
        return JSONResult({**job.public(), "url": url}, status_code=202, headers={"Location": url})

    @router.get("/jobs/{job_id}", summary="The job's status; its result once it succeeded, its error if it failed")
    async def status(job_id: str, request: Request) -> JSONResult:
        _check_available(service, jobs)
        job = await anyio.to_thread.run_sync(jobs.store.get, job_id, auth.tenant(request).only)
        if job is None:
            raise _not_found(job_id)
        body = job.public()
        progress = jobs.progress(job_id) if job.status == RUNNING else None
        if progress is not None:
            body["progress"] = progress
        return JSONResult(body)

    @router.delete("/jobs/{job_id}", status_code=204, summary="Forget a job and its result")
    async def delete(job_id: str, request: Request) -> Response:
        _check_available(service, jobs)
        job = await anyio.to_thread.run_sync(jobs.store.delete, job_id, auth.tenant(request).only)
        if job is None:
            raise _not_found(job_id)
        jobs.forget(job_id)  # running: its decode stops at the next window; a callback owed is dropped
        await jobs.remove_upload(Path(job.input_path))
        return Response(status_code=204)

    return router


def _check_available(service: InferenceService, jobs: Jobs) -> None:
    """Jobs are accepted while the model loads (they wait for it); not when it failed to load."""
    if jobs.unavailable is not None or jobs.store is None:
        raise NotReadyError(jobs.unavailable or "the job store is starting; retry shortly", code="jobs_unavailable",
                            retry_after=5)
    if service.load_error is not None:
        service.check_ready()


def _not_found(job_id: str) -> NotFoundError:
    return NotFoundError(f"no job {job_id!r}: it never existed, was deleted or has expired (JOBS_TTL_S)",
                         code="job_not_found")


def _callback_url(url: str | None, *, allow_internal: bool) -> str | None:
    if url is None:
        return None
    problem = url_problem(url, allow_internal=allow_internal)
    if problem is not None:
        raise with_param(InvalidParameterError(problem), "callback_url")
    return url


async def _receive(request: Request, path: Path, limit: int, timeout_s: float, setting: str,
                   disk: DiskBudget) -> int:
    """Stream the body into ``path``, writing on a thread, its bytes taken from ``disk`` as they come
    (a partial file never becomes a job: the caller removes it); returns its size."""
    upload = await anyio.to_thread.run_sync(UploadWriter, path)
    received = 0
    try:
        pieces, pending = [], 0
        async for chunk in limited_stream(request, limit, timeout_s, setting):
            disk.take(len(chunk))
            received += len(chunk)
            pieces.append(chunk)
            pending += len(chunk)
            if pending >= WRITE_BYTES:
                await anyio.to_thread.run_sync(upload.write, pieces)
                pieces, pending = [], 0
        await anyio.to_thread.run_sync(upload.write, pieces)
        size = await anyio.to_thread.run_sync(upload.finish)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(upload.abort)
            disk.give(received)
        raise
    if size == 0:
        raise EmptyAudioError("the request body is empty: send the audio file or a JSON payload")
    return size

