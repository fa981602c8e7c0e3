"""The job runner inside the server: takes queued jobs from the store and decodes them through the
same ``InferenceService`` as the real-time routes (its concurrency gate and error mapping), then
stores the result, removes the upload and sends the callback.

Runs as asyncio tasks started and stopped by the app's lifespan. A job still running when the
process dies stays ``running`` in the store and is queued again at the next start.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

import anyio

from whisper_endpoint.adapters.errors import QueueFullError
from whisper_endpoint.adapters.payloads import toolkit_payload
from whisper_endpoint.errors import EndpointError
from whisper_endpoint.jobs.callbacks import deliver
from whisper_endpoint.jobs.settings import JobSettings
from whisper_endpoint.jobs.store import Job, JobStore

logger = logging.getLogger(__name__)


class Jobs:
    """The store, the uploads folder and the worker tasks of one server."""

    def __init__(self, settings: JobSettings, service):
        self.settings = settings
        self.service = service
        self.store: JobStore | None = None
        self.unavailable: str | None = None  # why /jobs cannot work (the database could not be opened)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        self._callbacks: set[asyncio.Task] = set()

    # --- lifespan ------------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            self.settings.uploads.mkdir(parents=True, exist_ok=True)
            self.store = await anyio.to_thread.run_sync(JobStore, self.settings.db)
        except Exception as exc:  # a read-only or missing volume must not take the real-time routes down
            self.unavailable = f"the job store cannot be opened ({type(exc).__name__}); see the server log"
            logger.error("jobs disabled: cannot open %s", self.settings.db, exc_info=exc)
            return
        requeued, failed = self.store.recover(self.settings.max_attempts)
        if requeued or failed:
            logger.info("jobs after restart: %d queued again, %d failed (interrupted too often)",
                        requeued, len(failed))
        for job in failed:
            self._finished(job.id)
        self._tasks = [
            asyncio.create_task(self._run(), name=f"job-worker-{n}") for n in range(self.settings.concurrency)
        ]

    async def stop(self) -> None:
        """Stop taking jobs; a job being decoded stays ``running`` and runs again after the restart."""
        for task in [*self._tasks, *self._callbacks]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._callbacks, return_exceptions=True)
        if self.store is not None:
            self.store.close()

    # --- submission ----------------------------------------------------------------------------

    def new_upload(self) -> tuple[str, Path]:
        job_id = uuid.uuid4().hex
        return job_id, self.settings.uploads / f"{job_id}.upload"

    def submitted(self) -> None:
        self._wake.set()

    # --- the worker ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                job = await anyio.to_thread.run_sync(self.store.claim_next) if self.service.ready else None
                if job is None:
                    await self._expire()
                    await self._sleep()
                    continue
                await self._decode(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a store problem (disk full...): log it, keep the worker alive
                logger.error("job worker error", exc_info=exc)
                await asyncio.sleep(self.settings.poll_s)

    async def _sleep(self) -> None:
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), self.settings.poll_s)
        except asyncio.TimeoutError:
            pass

    async def _decode(self, job: Job) -> None:
        try:
            data = await anyio.to_thread.run_sync(Path(job.input_path).read_bytes)
            payload = toolkit_payload(data, job.media_type, job.parameters)
            result = await self._through_gate(payload)
        except EndpointError as exc:
            await anyio.to_thread.run_sync(self.store.fail, job.id, exc.to_dict())
        except OSError:
            error = {"error": "the job's upload is missing on the server", "code": "upload_lost", "status": 500}
            await anyio.to_thread.run_sync(self.store.fail, job.id, error)
        else:
            await anyio.to_thread.run_sync(self.store.succeed, job.id, result)
        self._finished(job.id)

    async def _through_gate(self, payload: dict) -> dict:
        """Real-time requests and jobs share the gate; when its queue is full, jobs wait their turn."""
        while True:
            try:
                return await self.service.run(payload)
            except QueueFullError as exc:
                await asyncio.sleep(exc.retry_after)

    def _finished(self, job_id: str) -> None:
        job = self.store.get(job_id)
        if job is None:  # deleted while it ran
            return
        Path(job.input_path).unlink(missing_ok=True)
        if job.callback_url:
            task = asyncio.create_task(self._callback(job))
            self._callbacks.add(task)
            task.add_done_callback(self._callbacks.discard)

    async def _callback(self, job: Job) -> None:
        status = await anyio.to_thread.run_sync(
            lambda: deliver(job.callback_url, job.public(), timeout_s=self.settings.callback_timeout_s,
                            attempts=self.settings.callback_attempts,
                            allow_internal=self.settings.callback_allow_internal)
        )
        await anyio.to_thread.run_sync(self.store.set_callback_status, job.id, status)

    async def _expire(self) -> None:
        for job in await anyio.to_thread.run_sync(self.store.expire, self.settings.ttl_s):
            Path(job.input_path).unlink(missing_ok=True)
