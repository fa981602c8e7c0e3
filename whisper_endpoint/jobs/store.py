"""Jobs in SQLite: one row per job, so a restart loses none.

States: ``queued`` -> ``running`` -> ``succeeded`` | ``failed``; ``running`` -> ``queued`` when the
server stops it to shut down. A job still ``running`` when the server starts was interrupted (the
process died): it is queued again, or failed once it has been started ``max_attempts`` times. Every change is one transaction; the connection is shared by the
event loop's worker threads under a lock (SQLite allows one writer at a time anyway).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    media_type TEXT NOT NULL,
    parameters TEXT NOT NULL,
    input_path TEXT NOT NULL,
    callback_url TEXT,
    callback_status TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    result TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (status, created_at);
"""


@dataclass(frozen=True)
class Job:
    id: str
    status: str
    media_type: str
    parameters: dict
    input_path: str
    callback_url: str | None
    callback_status: str | None
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    result: dict | None
    error: dict | None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Job":
        values = dict(row)
        for name in ("parameters", "result", "error"):
            values[name] = json.loads(values[name]) if values[name] is not None else None
        return cls(**values)

    def public(self) -> dict:
        """What GET /jobs/{id} shows (not the server's file paths)."""
        body = {
            "id": self.id, "status": self.status, "created_at": self.created_at, "started_at": self.started_at,
            "finished_at": self.finished_at, "attempts": self.attempts, "parameters": self.parameters,
        }
        if self.callback_url is not None:
            body["callback"] = {"url": _without_secrets(self.callback_url), "status": self.callback_status}
        if self.status == SUCCEEDED:
            body["result"] = self.result
        if self.status == FAILED:
            body["error"] = self.error
        return body


class JobStore:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")  # readers never wait for the writer
            self._db.execute("PRAGMA synchronous=FULL")  # a job acknowledged with 202 survives a power cut
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(self, job_id: str, media_type: str, parameters: dict, input_path: str, callback_url: str | None) -> Job:
        with self._lock:
            self._db.execute(
                "INSERT INTO jobs (id, status, media_type, parameters, input_path, callback_url, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (job_id, QUEUED, media_type, json.dumps(parameters), input_path, callback_url, time.time()),
            )
        return self.get(job_id)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return Job.from_row(row) if row is not None else None

    def count(self, status: str) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM jobs WHERE status = ?", (status,)).fetchone()[0]

    def claim_next(self) -> Job | None:
        """The oldest queued job, now running (one statement, so two workers never take the same job)."""
        with self._lock:
            row = self._db.execute(
                "UPDATE jobs SET status = ?, attempts = attempts + 1, started_at = ? WHERE id = "
                "(SELECT id FROM jobs WHERE status = ? ORDER BY created_at, rowid LIMIT 1) RETURNING *",
                (RUNNING, time.time(), QUEUED),
            ).fetchone()
        return Job.from_row(row) if row is not None else None

    def succeed(self, job_id: str, result: dict) -> None:
        self._finish(job_id, SUCCEEDED, result=json.dumps(result, default=_plain))

    def fail(self, job_id: str, error: dict) -> None:
        self._finish(job_id, FAILED, error=json.dumps(error))

    def _finish(self, job_id: str, status: str, result: str | None = None, error: str | None = None) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE jobs SET status = ?, finished_at = ?, result = ?, error = ? WHERE id = ?",
                (status, time.time(), result, error, job_id),
            )

    def requeue(self, job_id: str) -> None:
        """A running job the server stopped itself (shutdown): queued again, this start not counted."""
        with self._lock:
            self._db.execute(
                "UPDATE jobs SET status = ?, started_at = NULL, attempts = MAX(attempts - 1, 0) "
                "WHERE id = ? AND status = ?",
                (QUEUED, job_id, RUNNING),
            )

    def set_callback_status(self, job_id: str, status: str) -> None:
        with self._lock:
            self._db.execute("UPDATE jobs SET callback_status = ? WHERE id = ?", (status, job_id))

    def recover(self, max_attempts: int) -> tuple[int, list[Job]]:
        """After a restart: (jobs queued again, jobs failed for having been interrupted too often)."""
        error = json.dumps({
            "error": f"the server stopped while running this job {max_attempts} times; not retried again",
            "code": "interrupted", "status": 500,
        })
        with self._lock:
            failed = self._db.execute(
                "UPDATE jobs SET status = ?, finished_at = ?, error = ? WHERE status = ? AND attempts >= ? RETURNING *",
                (FAILED, time.time(), error, RUNNING, max_attempts),
            ).fetchall()
            requeued = self._db.execute(
                "UPDATE jobs SET status = ?, started_at = NULL WHERE status = ?", (QUEUED, RUNNING)
            ).rowcount
        return requeued, [Job.from_row(row) for row in failed]

    def input_paths(self) -> set[str]:
        with self._lock:
            return {row[0] for row in self._db.execute("SELECT input_path FROM jobs")}

    def delete(self, job_id: str) -> Job | None:
        with self._lock:
            row = self._db.execute("DELETE FROM jobs WHERE id = ? RETURNING *", (job_id,)).fetchone()
        return Job.from_row(row) if row is not None else None

    def expire(self, ttl_s: float, now: float | None = None) -> list[Job]:
        """Delete finished jobs older than ``ttl_s``; returns them (their uploads are the caller's)."""
        cutoff = (now if now is not None else time.time()) - ttl_s
        with self._lock:
            rows = self._db.execute(
                "DELETE FROM jobs WHERE status IN (?, ?) AND finished_at < ? RETURNING *", (SUCCEEDED, FAILED, cutoff)
            ).fetchall()
        return [Job.from_row(row) for row in rows]


def _without_secrets(url: str) -> str:
    """The callback URL's origin only: its user info, query and path often carry a webhook's token
    (Slack's and Discord's webhook URLs are secret paths)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    try:
        if parts.port is not None:
            netloc += f":{parts.port}"
    except ValueError:  # a row stored before the port was checked at submission
        pass
    return urlunsplit((parts.scheme, netloc, "/..." if parts.path.strip("/") else parts.path, "", ""))


def _plain(value):
    if hasattr(value, "tolist"):  # numpy scalars in a handler result
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
