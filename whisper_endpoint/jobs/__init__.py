"""Async jobs: submit now, fetch later (``POST /jobs``, ``GET /jobs/{id}``), kept in SQLite or PostgreSQL."""

from whisper_endpoint.jobs.settings import JobSettings
from whisper_endpoint.jobs.store import JobStore, open_store
from whisper_endpoint.jobs.worker import Jobs

__all__ = ["JobSettings", "JobStore", "Jobs", "open_store"]

