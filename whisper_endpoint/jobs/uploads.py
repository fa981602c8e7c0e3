"""A job's upload on its way to disk. Every method blocks (file writes, ``fsync``): the route calls
them on a thread, so the event loop (``/health``, other requests) never waits for the disk."""

from __future__ import annotations

from os import fsync
from pathlib import Path

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
        """Flush and ``fsync`` (the 202 promises the upload survives a crash); returns its size."""
        self._file.flush()
        fsync(self._file.fileno())
        self._file.close()
        return self.size

    def abort(self) -> None:
        """Close and remove a partial upload (it never becomes a job)."""
        self._file.close()
        self.path.unlink(missing_ok=True)
