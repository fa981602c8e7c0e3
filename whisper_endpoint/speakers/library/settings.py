"""Where the speaker library lives and how big it may grow (``SPEAKERS_DB``, ``SPEAKERS_MAX``, ``SPEAKERS_LIBRARY``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from whisper_endpoint.core.config import cache_root

LIBRARY_FILE = "speakers.sqlite"


class LibrarySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SPEAKERS_", populate_by_name=True, extra="ignore")

    library: bool = Field(True, description="Keep a speaker library (/v1/speakers) and name its voices in every "
                          "diarized request; false: only SPEAKERS_DIR and each request's known_speakers.")
    db: Optional[Path] = Field(None, description="The library's SQLite file; unset: speakers.sqlite beside the "
                               "jobs database (JOBS_DB), or in the model cache when the jobs use PostgreSQL.")
    max: int = Field(1000, ge=1, le=100_000, description="Most speakers the library holds for each tenant (SPEAKERS_DIR's included).")

    def path(self, jobs_db) -> Path:
        """``SPEAKERS_DB``, else beside the jobs' SQLite file (a PostgreSQL URL: the default jobs folder)."""
        if self.db is not None:
            return self.db
        if isinstance(jobs_db, Path):
            return jobs_db.with_name(LIBRARY_FILE)
        return cache_root() / "jobs" / LIBRARY_FILE  # the jobs' default folder
