"""Jobs in a SQLite file: the embedded default, for one server process per file. The connection is
shared by the event loop's worker threads under a lock (SQLite allows one writer at a time anyway)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from whisper_endpoint.jobs import schema
from whisper_endpoint.jobs.sql_store import SqlJobStore


class SqliteJobStore(SqlJobStore):
    shared = False
    _claimed = "SELECT id FROM jobs WHERE status = ? ORDER BY created_at, rowid LIMIT 1"

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        # timeout: another process migrating the file holds its write lock for a moment
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            _wal(self._db)  # readers never wait for the writer
            self._db.execute("PRAGMA synchronous=FULL")  # a job acknowledged with 202 survives a power cut
            self._db.execute("BEGIN IMMEDIATE")  # the write lock: one process migrates at a time
            try:
                self._db.execute(schema.VERSION_TABLE)
                row = self._db.execute("SELECT version FROM schema_version").fetchone()
                for statement in schema.pending(row[0] if row else 0, real="REAL"):
                    self._db.execute(statement)
                self._db.execute("DELETE FROM schema_version")
                self._db.execute("INSERT INTO schema_version (version) VALUES (?)", (schema.VERSION,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _run(self, sql: str, params: tuple = ()) -> tuple[list[dict], int]:
        with self._lock:
            cursor = self._db.execute(sql, params)
            rows = [dict(row) for row in cursor.fetchall()]
            return rows, cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _wal(db: sqlite3.Connection, wait_s: float = 30.0) -> None:
    """Switch to WAL. The switch needs the file to itself, and SQLite answers "database is locked" at once
    (its busy timeout does not cover it) while another server opening the same file holds a lock: retry."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
