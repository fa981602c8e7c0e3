"""The jobs' tables, created and migrated by the server itself: ``schema_version`` holds the number of
migrations applied. The store runs ``pending`` inside one transaction that holds the database's write
lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock), so servers starting at once apply each
migration exactly once. Written once for both databases; ``{real}`` is each one's 8-byte float.
"""

from __future__ import annotations

# Append only: a database at version N runs MIGRATIONS[N:]. The first is the table from before the
# version table existed (IF NOT EXISTS: such a database starts at version 0 and keeps its rows).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS jobs (
            id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            media_type TEXT NOT NULL,
            parameters TEXT NOT NULL,
            input_path TEXT NOT NULL,
            callback_url TEXT,
            callback_status TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            created_at {real} NOT NULL,
            started_at {real},
            finished_at {real},
            result TEXT,
            error TEXT
        )""",
        "CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (status, created_at)",
    ),
    (  # leases: the server running a job, and until when it holds it unless it renews (several servers)
        "ALTER TABLE jobs ADD COLUMN lease_owner TEXT",
        "ALTER TABLE jobs ADD COLUMN lease_expires {real}",
    ),
    (  # a callback owed survives a restart (issue 60): pending until delivered or its attempts are spent.
        # A finished job whose callback never got a status was cut off by a stop: it is owed too.
        "ALTER TABLE jobs ADD COLUMN callback_attempts INTEGER NOT NULL DEFAULT 0",
        "UPDATE jobs SET callback_status = 'pending' WHERE callback_url IS NOT NULL AND callback_status IS NULL "
        "AND status IN ('succeeded', 'failed')",
    ),
    (  # a long recording's finished blocks (issue 62): a job taken over resumes after the last one kept
        """CREATE TABLE IF NOT EXISTS job_blocks (
            job_id TEXT NOT NULL,
            block INTEGER NOT NULL,
            block_key TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (job_id, block)
        )""",
    ),
    (  # tenants (issue 74): each job its key's tenant; jobs from before tenants are the default tenant's
        "ALTER TABLE jobs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default'",
    ),
)
VERSION = len(MIGRATIONS)
VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"


def pending(version: int, real: str) -> list[str]:
    """The statements that take a database from ``version`` to ``VERSION``."""
    if version > VERSION:
        raise RuntimeError(f"the job database is at schema version {version}, newer than this server's "
                           f"({VERSION}): upgrade the server")
    return [statement.format(real=real) for migration in MIGRATIONS[version:] for statement in migration]
