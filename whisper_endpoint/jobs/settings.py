"""Async job settings, read once from environment variables (``JOBS_DB``, ``JOBS_TTL_S``, ...)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional, Union
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from whisper_endpoint.core.config import cache_root

GB = 1024**3
POSTGRES_SCHEMES = ("postgresql", "postgres")


def _default_db() -> Path:
    # Next to the embedded models (MODEL_CACHE_DIR's default): writable, and kept across restarts.
    return cache_root() / "jobs" / "jobs.sqlite"


class JobSettings(BaseSettings):
    """Where jobs are kept and how they run. A SQLite file serves one server process; a PostgreSQL URL
    serves several servers (one queue), with uploads in a folder they all read."""

    model_config = SettingsConfigDict(env_prefix="JOBS_", populate_by_name=True, extra="ignore")

    enabled: bool = Field(True, description="Serve /jobs and run the job worker.")
    db: Union[Path, str] = Field(
        default_factory=_default_db, description="The SQLite file (put it on a persistent volume), or a "
        "postgresql://user:password@host/dbname URL: one queue for several servers."
    )
    upload_dir: Optional[Path] = Field(
        None, description="Uploaded audio until its job ends; default <db>.uploads. Required with PostgreSQL: "
        "a folder every server reads and writes (a shared volume)."
    )
    lease_s: float = Field(
        30.0, gt=0, description="A running job's lease: its server renews it while the job runs; a job whose "
        "lease expired (its server died) is queued again by any server."
    )
    ttl_s: float = Field(7 * 24 * 3600.0, gt=0, description="How long finished jobs (results, errors) are kept.")
    max_body_bytes: int = Field(GB, ge=1, description="Largest upload on POST /jobs (SageMaker async: 1 GB).")
    max_json_body_bytes: int = Field(
        64 * 1024**2, ge=1, description="Largest JSON body on POST /jobs (decoded into objects: send long audio "
        "as a file, up to JOBS_MAX_BODY_BYTES)."
    )
    max_queued: int = Field(
        1000, ge=0, description="Jobs waiting to run, uploads under way included; beyond it POST /jobs is 429."
    )
    max_disk_bytes: int = Field(
        20 * GB, ge=1, description="Disk all uploads may take together (those arriving counted as they come); "
        "beyond it POST /jobs is 429."
    )
    max_attempts: int = Field(
        3, ge=1, description="Runs a job may start; a job interrupted (server killed) this often fails."
    )
    concurrency: int = Field(
        1, ge=1, le=64, description="Jobs decoded at once, on slots of their own (besides MAX_CONCURRENCY)."
    )
    timeout_s: float = Field(
        24 * 3600.0, ge=0, description="A job's decode stops at its next window past this and the job fails "
        "(0: no deadline)."
    )
    stop_timeout_s: float = Field(
        30.0, ge=0, description="On shutdown, how long to wait for running jobs to stop at their next window "
        "(they are queued again; one still inside its window then is queued again all the same, its window dropped)."
    )
    poll_s: float = Field(2.0, gt=0, description="How often the worker looks for work and expired jobs.")
    callback_timeout_s: float = Field(10.0, gt=0, description="Timeout of one callback request.")
    callback_attempts: int = Field(3, ge=1, le=10, description="Tries per callback (1 s, 2 s, ... apart).")
    callback_allow_internal: bool = Field(
        False, description="Allow callbacks to loopback, private and link-local addresses (a trusted network)."
    )

    @field_validator("db", mode="before")
    @classmethod
    def _store(cls, value):
        """A PostgreSQL URL stays a string, a path becomes a Path; any other URL is refused here (the
        server does not start) rather than taken for a relative file name."""
        if isinstance(value, Path) or "://" not in str(value):
            return Path(value)
        scheme = urlsplit(value).scheme.lower()
        if scheme == "sqlite":  # sqlite:///absolute/path, as SQLAlchemy writes it
            return Path(urlsplit(value).path)
        if scheme not in POSTGRES_SCHEMES:
            # no ValueError: pydantic would quote the whole URL, password included, in its message
            raise StoreUrlError(f"JOBS_DB={masked_url(value)}: the job store serves SQLite files and "
                                f"postgresql:// URLs, not {scheme}://")
        if importlib.util.find_spec("psycopg") is None:
            raise StoreUrlError(f"JOBS_DB={masked_url(value)} needs psycopg 3: pip install 'psycopg[binary]' "
                                "(requirements-server.txt)")
        return value

    @model_validator(mode="after")
    def _shared_uploads(self):
        if isinstance(self.db, str) and self.upload_dir is None and self.enabled:
            raise StoreUrlError(f"JOBS_DB={masked_url(self.db)} needs JOBS_UPLOAD_DIR: a folder every server "
                                "reads and writes (the uploads wait there for whichever server runs the job)")
        return self

    @property
    def uploads(self) -> Path:
        return self.upload_dir or self.db.with_name(self.db.name + ".uploads")

    @property
    def shown_db(self) -> str:
        """``db`` for logs and errors: a URL without its password."""
        return masked_url(self.db) if isinstance(self.db, str) else str(self.db)

    def secrets(self) -> list[str]:
        """What the logs must never show: the database password."""
        password = urlsplit(self.db).password if isinstance(self.db, str) else None
        return [password] if password else []


class StoreUrlError(Exception):
    """JOBS_DB names a store this server cannot serve: a start-up error (its message names it, masked).
    Not a ValueError, which pydantic would turn into a message quoting the input."""


def masked_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)
