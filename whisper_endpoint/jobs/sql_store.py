"""The job store's statements, written once for SQLite and PostgreSQL (``?`` placeholders, portable
SQL); each database's class (``sqlite_store``, ``postgres_store``) says how to connect and run them.

States: ``queued`` -> ``running`` -> ``succeeded`` | ``failed``; ``running`` -> ``queued`` when the
server stops it to shut down, or when its lease expires. A server running a job holds a lease on it
(``lease_owner``, ``lease_expires``) and renews it while the job runs; a job whose lease expired (its
server died, SIGKILL and all) is queued again by any server, or failed once it has been started
``max_attempts`` times. A job finishes only for the server holding its lease, so it finishes once
(one callback) even when a stalled server's lease was taken over. Every change is one statement.

A running job decoded in blocks keeps each finished block in ``job_blocks`` (only while its server holds
its lease); whoever runs it next takes the blocks whose key still matches. A job's blocks go when it
finishes, and with ``expire`` for jobs no longer queued or running (deleted, failed while recovered).

A finished job with a callback URL owes its callback (``callback_status`` ``pending``) until it is
delivered or its ``callback_attempts`` are spent, and its lease then covers the delivery: the finishing
server keeps it and renews it while it delivers; one that stops releases it, one that dies lets it lapse,
and any server (at start-up: every pending one, on SQLite) claims it again and delivers (issue 60).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from whisper_endpoint.core.tenants import DEFAULT
from whisper_endpoint.jobs.job import FAILED, PENDING, QUEUED, RUNNING, SUCCEEDED, Job


class SqlJobStore:
    """The shared logic; subclasses implement ``_run`` and ``close`` and say ``shared`` and ``_claimed``."""

    shared = False  # several servers may use this store at once (else: one process, and start-up recovers all)
    _claimed = ""  # the subquery that picks (and locks) the oldest queued job's id

    def _run(self, sql: str, params: tuple = ()) -> tuple[list[dict], int]:
        """Run one statement in its own transaction: (the rows it returns, the rows it changed)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _rows(self, sql: str, params: tuple = ()) -> list[Job]:
        return [Job.from_row(row) for row in self._run(sql, params)[0]]

    def _one(self, sql: str, params: tuple = ()) -> Job | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def add(self, job_id: str, media_type: str, parameters: dict, input_path: str, callback_url: str | None,
            tenant: str = DEFAULT) -> Job:
        return self._one(
            "INSERT INTO jobs (id, status, media_type, parameters, input_path, callback_url, created_at, tenant) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
            (job_id, QUEUED, media_type, json.dumps(parameters), input_path, callback_url, time.time(), tenant),
        )

    def get(self, job_id: str, tenant: str | None = None) -> Job | None:
        """The job ``job_id``; with ``tenant``, only if it is that tenant's (None: anyone's)."""
        return self._one(f"SELECT * FROM jobs WHERE id = ?{_OF_TENANT[tenant is not None]}",
                         (job_id, *_tenant(tenant)))

    def count(self, status: str) -> int:
        return self._run("SELECT COUNT(*) AS n FROM jobs WHERE status = ?", (status,))[0][0]["n"]

    def claim_next(self, owner: str, lease_s: float) -> Job | None:
        """The oldest queued job, now running under ``owner``'s lease (one statement: two workers, of one
        server or of two, never take the same job)."""
        now = time.time()
        return self._one(
            "UPDATE jobs SET status = ?, attempts = attempts + 1, started_at = ?, lease_owner = ?, "
            f"lease_expires = ? WHERE id = ({self._claimed}) AND status = ? RETURNING *",
            (RUNNING, now, owner, now + lease_s, QUEUED, QUEUED),
        )

    def renew(self, owner: str, job_ids: Iterable[str], lease_s: float) -> set[str]:
        """Extend ``owner``'s leases on ``job_ids`` (running, or delivering their callback); returns those it
        still holds (a job missing was deleted, or its lease expired and it went to another server: stop it)."""
        ids = list(job_ids)
        if not ids:
            return set()
        marks = ", ".join("?" * len(ids))
        rows, _ = self._run(
            "UPDATE jobs SET lease_expires = ? WHERE lease_owner = ? AND (status = ? OR callback_status = ?) "
            f"AND id IN ({marks}) RETURNING id",
            (time.time() + lease_s, owner, RUNNING, PENDING, *ids),
        )
        return {row["id"] for row in rows}

    def succeed(self, job_id: str, result: dict, owner: str) -> bool:
        """Store the result if ``owner`` still holds the job; False when it does not (deleted, taken over)."""
        return self._finish(job_id, owner, SUCCEEDED, result=json.dumps(result, default=_plain))

    def fail(self, job_id: str, error: dict, owner: str) -> bool:
        return self._finish(job_id, owner, FAILED, error=json.dumps(error))

    def _finish(self, job_id: str, owner: str, status: str, result: str | None = None, error: str | None = None) -> bool:
        # With a callback the lease stays: it now covers the delivery.
        return self._run(
            f"UPDATE jobs SET status = ?, finished_at = ?, result = ?, error = ?, {_OWED} "
            "WHERE id = ? AND status = ? AND lease_owner = ?",
            (status, time.time(), result, error, PENDING, job_id, RUNNING, owner),
        )[1] == 1

    def requeue(self, job_id: str, owner: str) -> None:
        """A running job the server stopped itself (shutdown): queued again, this start not counted."""
        self._run(
            "UPDATE jobs SET status = ?, started_at = NULL, lease_owner = NULL, lease_expires = NULL, "
            "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END "
            "WHERE id = ? AND status = ? AND lease_owner = ?",
            (QUEUED, job_id, RUNNING, owner),
        )

    def claim_callbacks(self, owner: str, lease_s: float, *, everyone: bool = False,
                        now: float | None = None) -> list[Job]:
        """The finished jobs whose callback is owed and whose lease is free or expired (``everyone``: all of
        them, when this process is the store's only user and has just started), now leased to ``owner``."""
        now = now if now is not None else time.time()
        cutoff = float("inf") if everyone else now
        return self._rows(
            "UPDATE jobs SET lease_owner = ?, lease_expires = ? WHERE callback_status = ? AND status IN (?, ?) "
            "AND (lease_owner IS NULL OR COALESCE(lease_expires, 0) < ?) RETURNING *",
            (owner, now + lease_s, PENDING, SUCCEEDED, FAILED, cutoff),
        )

    def callback_failed(self, job_id: str, owner: str) -> None:
        """One delivery of ``owner``'s failed: one of the callback's attempts spent."""
        self._run("UPDATE jobs SET callback_attempts = callback_attempts + 1 WHERE id = ? AND lease_owner = ? "
                  "AND callback_status = ?", (job_id, owner, PENDING))

    def set_callback_status(self, job_id: str, status: str, owner: str) -> None:
        """The delivery's outcome (``delivered``, ``failed: ...``): no longer owed, the lease given up."""
        self._run("UPDATE jobs SET callback_status = ?, lease_owner = NULL, lease_expires = NULL "
                  "WHERE id = ? AND lease_owner = ? AND callback_status = ?", (status, job_id, owner, PENDING))

    def release_callback(self, job_id: str, owner: str) -> None:
        """``owner`` stops delivering (it shuts down): still owed, for any server to claim."""
        self._run("UPDATE jobs SET lease_owner = NULL, lease_expires = NULL WHERE id = ? AND lease_owner = ? "
                  "AND callback_status = ?", (job_id, owner, PENDING))

    def callback_urls(self) -> dict[str, str]:
        """Every kept job's callback URL, by job id (their credentials are masked in the logs)."""
        rows, _ = self._run("SELECT id, callback_url FROM jobs WHERE callback_url IS NOT NULL")
        return {row["id"]: row["callback_url"] for row in rows}

    def recover(self, max_attempts: int, *, everyone: bool = False, now: float | None = None) -> tuple[int, list[Job]]:
        """Running jobs whose lease has expired (``everyone``: all running jobs, when this process is the
        store's only user and has just started): (how many queued again, those failed for having been
        interrupted ``max_attempts`` times)."""
        cutoff = float("inf") if everyone else (now if now is not None else time.time())
        error = json.dumps({
            "error": f"the server stopped while running this job {max_attempts} times; not retried again",
            "code": "interrupted", "status": 500,
        })
        expired = "status = ? AND COALESCE(lease_expires, 0) < ?"
        failed = self._rows(  # with a callback: owed, for claim_callbacks (its lease free)
            "UPDATE jobs SET status = ?, finished_at = ?, error = ?, lease_owner = NULL, lease_expires = NULL, "
            f"callback_status = CASE WHEN callback_url IS NULL THEN NULL ELSE ? END WHERE {expired} "
            "AND attempts >= ? RETURNING *",
            (FAILED, time.time(), error, PENDING, RUNNING, cutoff, max_attempts),
        )
        requeued = self._run(
            f"UPDATE jobs SET status = ?, started_at = NULL, lease_owner = NULL, lease_expires = NULL WHERE {expired}",
            (QUEUED, RUNNING, cutoff),
        )[1]
        return requeued, failed

    def save_block(self, job_id: str, owner: str, index: int, key: str, body: dict) -> bool:
        """Keep a finished block of ``owner``'s running job; False when it no longer holds the job."""
        return self._run(
            "INSERT INTO job_blocks (job_id, block, block_key, body) SELECT ?, ?, ?, ? WHERE EXISTS "
            "(SELECT 1 FROM jobs WHERE id = ? AND status = ? AND lease_owner = ?) ON CONFLICT (job_id, block) "
            "DO UPDATE SET block_key = excluded.block_key, body = excluded.body",
            (job_id, index, key, json.dumps(body), job_id, RUNNING, owner),
        )[1] == 1

    def load_block(self, job_id: str, index: int, key: str) -> dict | None:
        """The block kept for this job at ``index``, when it was kept under ``key``."""
        rows, _ = self._run("SELECT body FROM job_blocks WHERE job_id = ? AND block = ? AND block_key = ?",
                            (job_id, index, key))
        return json.loads(rows[0]["body"]) if rows else None

    def block_key(self, job_id: str, index: int) -> str | None:
        """The key the block kept for this job at ``index`` was kept under (None: none kept)."""
        rows, _ = self._run("SELECT block_key FROM job_blocks WHERE job_id = ? AND block = ?", (job_id, index))
        return rows[0]["block_key"] if rows else None

    def forget_blocks(self, job_id: str) -> None:
        self._run("DELETE FROM job_blocks WHERE job_id = ?", (job_id,))

    def input_paths(self) -> set[str]:
        return {row["input_path"] for row in self._run("SELECT input_path FROM jobs")[0]}

    def delete(self, job_id: str, tenant: str | None = None) -> Job | None:
        """Delete the job ``job_id`` (with ``tenant``: only if it is that tenant's); the job deleted, or None."""
        return self._one(f"DELETE FROM jobs WHERE id = ?{_OF_TENANT[tenant is not None]} RETURNING *",
                         (job_id, *_tenant(tenant)))

    def expire(self, ttl_s: float, now: float | None = None) -> list[Job]:
        """Delete finished jobs older than ``ttl_s``; returns them (their uploads are the caller's)."""
        cutoff = (now if now is not None else time.time()) - ttl_s
        self._run("DELETE FROM job_blocks WHERE job_id NOT IN (SELECT id FROM jobs WHERE status IN (?, ?))",
                  (QUEUED, RUNNING))
        return self._rows(
            "DELETE FROM jobs WHERE status IN (?, ?) AND finished_at < ? RETURNING *", (SUCCEEDED, FAILED, cutoff)
        )


_OF_TENANT = {False: "", True: " AND tenant = ?"}


def _tenant(tenant: str | None) -> tuple:
    return () if tenant is None else (tenant,)


# A finishing job: its callback owed (and its lease kept for the delivery) when it has one.
_OWED = ("callback_status = CASE WHEN callback_url IS NULL THEN NULL ELSE ? END, "
         "lease_owner = CASE WHEN callback_url IS NULL THEN NULL ELSE lease_owner END, "
         "lease_expires = CASE WHEN callback_url IS NULL THEN NULL ELSE lease_expires END")


def _plain(value):
    if hasattr(value, "tolist"):  # numpy scalars in a handler result
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
