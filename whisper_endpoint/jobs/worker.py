"""The job runner inside the server: takes queued jobs from the store and decodes them through the
same ``InferenceService`` as the real-time routes (its error mapping), on slots of their own, then
stores the result, removes the upload and sends the callback.

Runs as ``JOBS_CONCURRENCY`` asyncio tasks started and stopped by the app's lifespan; every store and
file operation runs on a thread, never on the event loop. Each running job has a ``DecodeContext``:
its progress (windows decoded, stage) is what GET /jobs/{id} shows, its deadline is ``JOBS_TIMEOUT_S``
(past it the decode stops at its next window and the job fails), and a shutdown stops it at its next
window and queues it again (a worker still inside a window after JOBS_STOP_TIMEOUT_S is cancelled, and
its job queued again all the same). A long recording is decoded in blocks, each kept in the store as it
finishes (``kept_blocks.py``): a job queued again resumes after its last block kept. A job still running
when the process dies stays ``running`` in the store
and is queued again at the next start (SQLite: this process is the file's only user) or once its lease
expires (PostgreSQL: any server). The heartbeat renews the leases of this server's running jobs; a job
whose lease it no longer holds (deleted through another server, or taken over) stops at its next window.
Callbacks are ``deliveries``' (owed in the store until delivered: a restart does not lose them); the
heartbeat renews their leases too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from whisper_endpoint.adapters.errors import InternalError, QueueFullError
from whisper_endpoint.adapters.http import as_endpoint_error
from whisper_endpoint.core.decode_context import DISCONNECTED, SHUTDOWN, DecodeContext, DecodeStopped
from whisper_endpoint.core.errors import EndpointError
from whisper_endpoint.jobs import stored
from whisper_endpoint.jobs.deliveries import Deliveries, Secrets
from whisper_endpoint.jobs.kept_blocks import KeptBlocks
from whisper_endpoint.jobs.settings import JobSettings
from whisper_endpoint.jobs.store import PENDING, QUEUED, Job, JobStore, open_store
from whisper_endpoint.jobs.uploads import DiskBudget

logger = logging.getLogger(__name__)

# A shared uploads folder: another server may be receiving a file whose job row is not stored yet, so
# only uploads left this long unwritten count as orphans at start-up.
SHARED_SWEEP_GRACE_S = 3600
UPLOAD_LOST = {"error": "the job's upload is missing on the server", "code": "upload_lost", "status": 500}


class Jobs:
    """The store, the uploads folder and the worker tasks of one server."""

    def __init__(self, settings: JobSettings, service, secrets: Secrets | None = None):
        """``secrets``: where callback credentials go to be masked in the logs (``serving.redaction``)."""
        self.settings = settings
        self.service = service
        self.store: JobStore | None = None
        self.unavailable: str | None = None  # why /jobs cannot work (the database could not be opened)
        self.running: dict[str, DecodeContext] = {}  # job id -> its decode's context (progress)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"  # this server's leases
        self._wake = asyncio.Event()
        self._stopping = False
        self._tasks: list[asyncio.Task] = []
        self._leases: asyncio.Task | None = None
        self.deliveries = Deliveries(settings, self.owner, secrets)
        self.disk = DiskBudget(settings.max_disk_bytes)
        self._uploading = 0  # submissions between their queue check and their row: counted as queued
        self._admission = asyncio.Lock()

    # --- lifespan ------------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            await anyio.to_thread.run_sync(lambda: self.settings.uploads.mkdir(parents=True, exist_ok=True))
            self.store = await anyio.to_thread.run_sync(open_store, self.settings.db)
        except Exception as exc:  # a read-only volume, a database down: the real-time routes stay up
            self.unavailable = f"the job store cannot be opened ({type(exc).__name__}); see the server log"
            logger.error("jobs disabled: cannot open %s", self.settings.shown_db, exc_info=exc)
            return
        swept, self.disk.used = await anyio.to_thread.run_sync(self._sweep)
        if swept:
            logger.info("jobs: %d upload(s) without a job removed (a crash between an upload and its job)", swept)
        self.deliveries.store = self.store
        await self.deliveries.hold_stored_secrets()
        # The only user of its file has just started: every running job was interrupted, every callback
        # owed was cut off. A shared store: only those whose lease expired (the others' servers are alive).
        await self._recover(everyone=not self.store.shared)
        await self.deliveries.claim(everyone=not self.store.shared)
        self._tasks = [
            asyncio.create_task(self._run(), name=f"job-worker-{n}") for n in range(self.settings.concurrency)
        ]
        self._leases = asyncio.create_task(self._heartbeat(), name="job-leases")

    async def stop(self) -> None:
        """Stop taking jobs; a job being decoded stops at its next window and is queued again."""
        self._stopping = True
        for context in list(self.running.values()):
            context.cancel(SHUTDOWN)
        self._wake.set()
        if self._tasks:
            _, late = await asyncio.wait(self._tasks, timeout=self.settings.stop_timeout_s)
            for task in late:  # still inside a window: cancelled, its job is queued again (_decode)
                logger.warning("a job did not stop within JOBS_STOP_TIMEOUT_S; queued again, its window dropped")
                task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)  # their jobs queued again, under their lease
        await self.deliveries.stop()  # their callbacks still owed, for the next start or another server
        others = [self._leases] if self._leases else []
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        if self.store is not None:
            await anyio.to_thread.run_sync(self.store.close)

    def _sweep(self) -> tuple[int, int]:
        """Blocking: remove the uploads no job refers to; (how many, the bytes the others hold)."""
        kept, removed, used = self.store.input_paths(), 0, 0
        written_before = time.time() - (SHARED_SWEEP_GRACE_S if self.store.shared else 0)
        for path in self.settings.uploads.iterdir():
            if not path.is_file():
                continue
            if str(path) in kept or path.stat().st_mtime > written_before:
                used += path.stat().st_size
            else:
                path.unlink(missing_ok=True)
                removed += 1
        return removed, used

    # --- submission and progress ---------------------------------------------------------------

    def new_upload(self) -> tuple[str, Path]:
        job_id = uuid.uuid4().hex
        return job_id, self.settings.uploads / f"{job_id}.upload"

    @asynccontextmanager
    async def admitted(self):
        """A place in the queue for one submission until its row is stored (429 when there is none): the
        check and the count are one step, so concurrent uploads cannot all pass JOBS_MAX_QUEUED."""
        async with self._admission:
            queued = await anyio.to_thread.run_sync(self.store.count, QUEUED)
            if queued + self._uploading >= self.settings.max_queued:
                raise QueueFullError(f"too many jobs waiting ({self.settings.max_queued}, JOBS_MAX_QUEUED); "
                                     "retry later", retry_after=60)
            self._uploading += 1
        try:
            yield
        finally:
            self._uploading -= 1

    async def remove_upload(self, path: Path) -> None:
        """Delete an upload (its job ended, was deleted or never became one) and give its disk back."""
        size = await anyio.to_thread.run_sync(_remove, path)
        self.disk.give(size)

    def submitted(self) -> None:
        self._wake.set()

    def cancel(self, job_id: str) -> None:
        """A job this server no longer holds (deleted, or taken over): if running it stops at its next
        window (its outcome has nowhere to go; its worker then takes the next job); a callback being
        delivered stops."""
        context = self.running.get(job_id)
        if context is not None:
            context.cancel(DISCONNECTED)  # the job's owner is gone from it, as a client that disconnects
        self.deliveries.cancel(job_id)

    def forget(self, job_id: str) -> None:
        """A deleted job: stopped as ``cancel`` does, its callback's credentials masked no longer."""
        self.cancel(job_id)
        self.deliveries.forget(job_id)

    def progress(self, job_id: str) -> dict | None:
        """A running job's progress: ``stage`` (queued, decoding, diarizing), ``windows_done``, ``windows_total``,
        and how far into the audio and how fast (DecodeContext.shown_progress)."""
        context = self.running.get(job_id)
        return context.shown_progress() if context is not None else None

    # --- the worker ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            try:
                job = (await anyio.to_thread.run_sync(self.store.claim_next, self.owner, self.settings.lease_s)
                       if self.service.ready else None)
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
        if self._stopping:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), self.settings.poll_s)
        except asyncio.TimeoutError:
            pass

    async def _decode(self, job: Job) -> None:
        library = getattr(self.service, "library", None)
        context = DecodeContext(  # the speakers' voices come back with the result: to enrol from it
            timeout_s=self.settings.timeout_s or None, timeout_setting="JOBS_TIMEOUT_S",
            keep_voices=library is not None,
            checkpoints=KeptBlocks(self.store, job.id, self.owner),  # a long recording's blocks: resumable
            request_id=job.id, tenant=job.tenant,
        )
        self.running[job.id] = context
        try:
            if await anyio.to_thread.run_sync(self.store.get, job.id) is None:
                return  # deleted after its claim, before DELETE could find it running
            outcome = await self._outcome(job, context)
        except asyncio.CancelledError:  # the worker itself was cancelled: the job is not lost
            context.cancel(SHUTDOWN)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.store.requeue, job.id, self.owner)
            raise
        finally:
            self.running.pop(job.id, None)
        if outcome is None:  # stopped for the shutdown
            logger.info("job %s stopped for the shutdown after %d windows; queued again", job.id,
                        context.progress.windows_done)
            await anyio.to_thread.run_sync(self.store.requeue, job.id, self.owner)
            return
        status, body, voices = outcome  # voices: those its speakers were found with
        if status == "succeeded" and voices:  # kept before the result shows: enrolling can follow
            await anyio.to_thread.run_sync(lambda: library.keep_job_voices(
                job.id, voices, older_than_s=self.settings.ttl_s))
        finish = self.store.succeed if status == "succeeded" else self.store.fail
        if await anyio.to_thread.run_sync(finish, job.id, body, self.owner):
            await self._finished(job.id)
        else:  # deleted, or its lease went to another server (this one stalled): that one finishes it
            logger.info("job %s: no longer this server's (deleted or taken over), stopped after %d of %s windows; "
                        "its outcome dropped", job.id, context.progress.windows_done, context.progress.windows_total)

    async def _outcome(self, job: Job, context: DecodeContext) -> tuple[str, dict, dict] | None:
        """("succeeded", result, voices found) or ("failed", error, {}); None when the shutdown stopped the
        decode."""
        try:  # read (a stored JSON body parsed) on a thread: never on the event loop
            payload = await anyio.to_thread.run_sync(stored.payload, Path(job.input_path), job.media_type,
                                                     job.parameters)
        except OSError:
            return "failed", UPLOAD_LOST, {}
        try:
            return "succeeded", *await self.service.run_job(payload, context)
        except DecodeStopped as stopped:
            if stopped.reason == SHUTDOWN:
                return None
            return "failed", as_endpoint_error(stopped).to_dict(), {}  # past JOBS_TIMEOUT_S: 504 deadline_exceeded
        except EndpointError as exc:
            return "failed", exc.to_dict(), {}
        except Exception as exc:  # a bug: the job fails with "internal error", the traceback goes to the log
            logger.error("job %s failed", job.id, exc_info=exc)
            return "failed", InternalError().to_dict(), {}

    async def _finished(self, job_id: str) -> None:
        await anyio.to_thread.run_sync(self.store.forget_blocks, job_id)
        job = await anyio.to_thread.run_sync(self.store.get, job_id)
        if job is None:  # deleted while it ran
            return
        await self.remove_upload(Path(job.input_path))
        if job.callback_status == PENDING:  # this server's lease covers the delivery
            self.deliveries.start(job)

    async def _expire(self) -> None:
        for job in await anyio.to_thread.run_sync(self.store.expire, self.settings.ttl_s):
            self.deliveries.forget(job.id)
            await self.remove_upload(Path(job.input_path))
        await self._recover(everyone=False)
        await self.deliveries.claim(everyone=False)

    async def _recover(self, everyone: bool) -> None:
        """Queue again the running jobs whose server is gone (``everyone``: all running ones), failing
        those interrupted JOBS_MAX_ATTEMPTS times."""
        requeued, failed = await anyio.to_thread.run_sync(
            lambda: self.store.recover(self.settings.max_attempts, everyone=everyone))
        if requeued or failed:
            logger.info("jobs of a stopped server: %d queued again, %d failed (interrupted too often)",
                        requeued, len(failed))
        for job in failed:  # their callbacks, owed, are claimed next
            await self.remove_upload(Path(job.input_path))

    async def _heartbeat(self) -> None:
        """Renew this server's leases well before they expire; stop the jobs it no longer holds."""
        every = min(self.settings.poll_s, self.settings.lease_s / 3)
        while True:  # until stop() cancels it, once the workers have queued their jobs again
            await asyncio.sleep(every)
            ids = [*self.running, *self.deliveries]
            try:
                held = await anyio.to_thread.run_sync(self.store.renew, self.owner, ids, self.settings.lease_s)
            except Exception as exc:  # the database is away: the leases may lapse, the jobs then run elsewhere
                logger.error("job leases not renewed", exc_info=exc)
                continue
            for job_id in set(ids) - held:
                self.cancel(job_id)


def _remove(path: Path) -> int:
    """Blocking: delete ``path``; the bytes it held (0 when it was gone)."""
    try:
        size = path.stat().st_size
        path.unlink()
    except FileNotFoundError:
        return 0
    return size
