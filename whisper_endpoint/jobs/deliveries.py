"""One server's callback deliveries: a finished job's callback is owed in the store until it is delivered
or its JOBS_CALLBACK_ATTEMPTS are spent, so a restart does not lose it (issue 60).

A delivery runs on asyncio under its job's lease, which the worker's heartbeat renews meanwhile; each
failed attempt is counted in the store. A shutdown cancels the deliveries in flight and gives their
leases back, still owed (the attempt it cut off is not spent); the next start (SQLite: every owed one)
or another server (PostgreSQL: once the lease is free or lapsed) claims and delivers them again, with the
same ``Idempotency-Key`` (``callbacks``). A callback URL's credentials are masked in the logs while its
job is kept (``secrets``: the serving layer's masking, which this package does not import).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Protocol

import anyio

from whisper_endpoint.jobs.callbacks import credentials, deliver
from whisper_endpoint.jobs.settings import JobSettings
from whisper_endpoint.jobs.store import Job, JobStore

logger = logging.getLogger(__name__)

CALLBACK_CONCURRENCY = 32  # callbacks in flight at once (open sockets); the rest wait


class Secrets(Protocol):
    """Where a job's callback credentials go to be masked in the logs (``serving.redaction``)."""

    def hold(self, owner: str, secrets: Iterable[str]) -> None: ...
    def release(self, owner: str) -> None: ...


class _Unmasked:
    def hold(self, owner: str, secrets: Iterable[str]) -> None:
        pass

    def release(self, owner: str) -> None:
        pass


class Deliveries:
    """The callbacks this server (``owner``) delivers; ``store`` is set once it is open."""

    def __init__(self, settings: JobSettings, owner: str, secrets: Secrets | None = None):
        self.settings, self.owner = settings, owner
        self.secrets = secrets or _Unmasked()
        self.store: JobStore | None = None
        self._tasks: dict[str, asyncio.Task] = {}  # job id -> its delivery
        self._slots = asyncio.Semaphore(CALLBACK_CONCURRENCY)

    def __iter__(self) -> Iterator[str]:
        """The ids of the jobs being delivered (their leases to renew)."""
        return iter(list(self._tasks))

    def hold_secrets(self, job_id: str, callback_url: str | None) -> None:
        """Mask the callback URL's credentials in the logs while the job is kept."""
        if callback_url:
            self.secrets.hold(job_id, credentials(callback_url))

    async def hold_stored_secrets(self) -> None:
        for job_id, url in (await anyio.to_thread.run_sync(self.store.callback_urls)).items():
            self.hold_secrets(job_id, url)

    def cancel(self, job_id: str) -> None:
        """Stop delivering ``job_id``'s callback (its lease went to another server, or the job is gone)."""
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()

    def forget(self, job_id: str) -> None:
        """The job is gone (deleted, expired): no delivery, and its credentials are masked no longer."""
        self.cancel(job_id)
        self.secrets.release(job_id)

    async def claim(self, everyone: bool) -> None:
        """Deliver the callbacks owed whose server stopped or died (``everyone``: every owed one)."""
        claimed = await anyio.to_thread.run_sync(
            lambda: self.store.claim_callbacks(self.owner, self.settings.lease_s, everyone=everyone))
        if claimed:
            logger.info("jobs: %d callback(s) owed from a stopped server, delivered again", len(claimed))
        for job in claimed:
            self.start(job)

    def start(self, job: Job) -> None:
        """Deliver ``job``'s callback (owed, under this server's lease) in the background."""
        if job.id not in self._tasks:
            self._tasks[job.id] = task = asyncio.create_task(self._deliver(job), name=f"callback-{job.id}")
            task.add_done_callback(lambda _: self._tasks.pop(job.id, None))

    async def stop(self) -> None:
        """Cancel the deliveries in flight; each gives its lease back, still owed."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _deliver(self, job: Job) -> None:
        # asyncio, not a thread: a host that never answers holds a socket, not one of the threads the
        # store, the uploads and the page's files need; past CALLBACK_CONCURRENCY callbacks wait their turn.
        self.hold_secrets(job.id, job.callback_url)
        spent = partial(anyio.to_thread.run_sync, self.store.callback_failed, job.id, self.owner)
        try:
            async with self._slots:
                status = await deliver(job.callback_url, job.public(), timeout_s=self.settings.callback_timeout_s,
                                       attempts=self.settings.callback_attempts - job.callback_attempts,
                                       allow_internal=self.settings.callback_allow_internal, failed=spent)
        except asyncio.CancelledError:  # shutdown, or the job is gone: still owed, for whoever claims it
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.store.release_callback, job.id, self.owner)
            raise
        await anyio.to_thread.run_sync(self.store.set_callback_status, job.id, status, self.owner)
