"""Jobs in PostgreSQL (psycopg 3): one queue for several servers. A job is claimed with ``FOR UPDATE
SKIP LOCKED`` (two servers polling at once take different jobs, neither waits for the other). One
connection per server, autocommit (each statement its own transaction, as on SQLite), used by the
event loop's worker threads under a lock; a connection that broke (the database restarted) is opened
again on the next call."""

from __future__ import annotations

import threading

import psycopg
from psycopg.rows import dict_row

from whisper_endpoint.jobs import schema
from whisper_endpoint.jobs.sql_store import SqlJobStore

_MIGRATION_LOCK = 0x77686A6F62  # pg_advisory_xact_lock's key: the servers starting at once migrate in turn


class PostgresJobStore(SqlJobStore):
    shared = True
    _claimed = "SELECT id FROM jobs WHERE status = ? ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str):
        self._url = url
        self._lock = threading.Lock()
        self._db = self._connect()
        with self._lock, self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            self._db.execute(schema.VERSION_TABLE)
            row = self._db.execute("SELECT version FROM schema_version").fetchone()
            for statement in schema.pending(row["version"] if row else 0, real="DOUBLE PRECISION"):
                self._db.execute(statement)
            self._db.execute("DELETE FROM schema_version")
            self._db.execute("INSERT INTO schema_version (version) VALUES (%s)", (schema.VERSION,))

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self._url, autocommit=True, row_factory=dict_row, connect_timeout=10,
                               application_name="whisper-endpoint jobs")

    def _run(self, sql: str, params: tuple = ()) -> tuple[list[dict], int]:
        with self._lock:
            if self._db.broken or self._db.closed:
                self._db = self._connect()
            cursor = self._db.execute(sql.replace("?", "%s"), params)
            rows = cursor.fetchall() if cursor.description is not None else []
            return rows, cursor.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()
