"""A job's upload on its way to disk, and the disk the uploads may take. ``UploadWriter``'s methods
block (file writes, ``fsync``): the route calls them on a thread, so the event loop (``/health``, other
requests) never waits for the disk. ``DiskBudget`` is counted on the event loop (no await between a
check and its count, so concurrent uploads cannot all pass it)."""

from __future__ import annotations

import os
from os import fsync
from pathlib import Path

from whisper_endpoint.adapters.errors import QueueFullError

WRITE_BYTES = 1024 * 1024  # pieces gathered before a write: one thread hop per MiB, not per network chunk


class UploadWriter:
    def __init__(self, path: Path):
        self.path = path
        self.size = 0
        self._file = open(path, "wb")  # noqa: SIM115 - closed by finish() or abort()

    def write(self, pieces: list[bytes]) -> None:
        for piece in pieces:
            self._file.write(piece)
            self.size += len(piece)

    def finish(self) -> int:
        """Flush and ``fsync``, the file and its folder's entry (the 202 promises the upload survives a
        power cut); returns its size."""
        self._file.flush()
        fsync(self._file.fileno())
        self._file.close()
        sync_folder(self.path.parent)
        return self.size

    def abort(self) -> None:
        """Close and remove a partial upload (it never becomes a job)."""
        self._file.close()
        self.path.unlink(missing_ok=True)


def sync_folder(folder: Path) -> None:
    """``fsync`` a folder: the names created or renamed in it survive a power cut."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fsync(descriptor)
    finally:
        os.close(descriptor)


class DiskBudget:
    """The bytes the uploads hold (``JOBS_MAX_DISK_BYTES``): those arriving are counted as they come."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def take(self, size: int) -> None:
        if self.used + size > self.limit:
            raise QueueFullError(
                f"the jobs' uploads would pass JOBS_MAX_DISK_BYTES ({self.limit} bytes; {self.used} in use); "
                "retry once jobs have finished", retry_after=60)
        self.used += size

    def give(self, size: int) -> None:
        self.used = max(0, self.used - size)
