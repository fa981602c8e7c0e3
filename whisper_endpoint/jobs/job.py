"""One job as the store keeps it, and what GET /jobs/{id} shows of it (never a server's file paths or a
callback's token)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields
from urllib.parse import urlsplit, urlunsplit

QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
# A finished job's callback: owed until "delivered" or "failed: ..." / "refused: ..." (kept across restarts).
PENDING = "pending"


@dataclass(frozen=True)
class Job:
    id: str
    status: str
    media_type: str
    parameters: dict
    input_path: str
    callback_url: str | None
    callback_status: str | None
    callback_attempts: int  # deliveries that failed (an attempt a shutdown cut off is not spent)
    attempts: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    result: dict | None
    error: dict | None
    tenant: str  # whose job it is (core/tenants.py)

    @classmethod
    def from_row(cls, row: Mapping) -> "Job":
        values = {field.name: row[field.name] for field in fields(cls)}  # the lease columns are the store's
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
