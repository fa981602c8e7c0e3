"""Async job settings, read once from environment variables (``JOBS_DB``, ``JOBS_TTL_S``, ...)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

GB = 1024**3


def _default_db() -> Path:
    # Next to the embedded models (MODEL_CACHE_DIR's default): writable, and kept across restarts.
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "whisper-endpoint" / "jobs" / "jobs.sqlite"


class JobSettings(BaseSettings):
    """Where jobs are kept and how they run. One server process per database file."""

    model_config = SettingsConfigDict(env_prefix="JOBS_", populate_by_name=True, extra="ignore")

    enabled: bool = Field(True, description="Serve /jobs and run the job worker.")
    db: Path = Field(default_factory=_default_db, description="The SQLite file; put it on a persistent volume.")
    upload_dir: Optional[Path] = Field(None, description="Uploaded audio until its job ends; default <db>.uploads.")
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

    @property
    def uploads(self) -> Path:
        return self.upload_dir or self.db.with_name(self.db.name + ".uploads")
