"""Admission and size limits: a concurrency gate with a bounded queue, and bodies read under a limit.

At most ``max_concurrency`` requests decode at once; up to ``max_queue`` more wait in arrival order;
beyond that a request gets 429 with ``Retry-After`` (the expected wait, from recent decode times).
Bodies are counted while they arrive, so an oversized upload is refused at the limit (413), not after
it has been stored.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import Request

from whisper_endpoint.adapters.errors import BodyTimeoutError, QueueFullError
from whisper_endpoint.core.errors import PayloadTooLargeError


class InferenceGate:
    """Counts running and waiting requests; lets ``max_concurrency`` through at a time."""

    def __init__(self, max_concurrency: int, max_queue: int):
        self.max_concurrency = max_concurrency
        self.max_queue = max_queue
        self.running = 0
        self.waiting = 0
        self.rejected = 0
        self._slots = asyncio.Semaphore(max_concurrency)
        self._mean_s = 1.0  # moving average of one decode, for Retry-After

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self.running >= self.max_concurrency and self.waiting >= self.max_queue:
            self.rejected += 1
            raise QueueFullError(
                f"the server is busy: {self.running} requests running and {self.waiting} queued "
                f"(MAX_QUEUE={self.max_queue}); retry later",
                retry_after=self.expected_wait_s(),
            )
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._slots.release()

    def record(self, seconds: float) -> None:
        self._mean_s = 0.8 * self._mean_s + 0.2 * seconds

    def expected_wait_s(self) -> int:
        """Seconds until the queue has drained by one place, rounded up; at least 1."""
        backlog = self.running + self.waiting
        return max(1, math.ceil(self._mean_s * backlog / self.max_concurrency))


async def read_body(request: Request, limit: int, timeout_s: float, setting: str = "MAX_BODY_BYTES") -> bytes:
    """The whole body, refused with 413 as soon as it passes ``limit`` bytes."""
    return b"".join([chunk async for chunk in limited_stream(request, limit, timeout_s, setting)])


async def limited_stream(
    request: Request, limit: int, timeout_s: float, setting: str = "MAX_BODY_BYTES"
) -> AsyncIterator[bytes]:
    """The body piece by piece; 413 past ``limit`` (``setting`` names where it comes from), 408 when
    the next piece takes over ``timeout_s``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit, f"Content-Length is {int(declared)} bytes", setting)
    received = 0
    chunks = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(chunks.__anext__(), timeout_s)
        except StopAsyncIteration:
            return
        except asyncio.TimeoutError:
            raise BodyTimeoutError(
                f"the request body stopped arriving ({received} bytes after waiting {timeout_s:g} s; "
                "setting BODY_TIMEOUT_S)"
            ) from None
        received += len(chunk)
        if received > limit:
            raise _too_large(limit, f"more than {limit} bytes arrived", setting)
        yield chunk


def _too_large(limit: int, what: str, setting: str) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"the request body is too large: {what}; this route accepts at most {limit} bytes "
        f"({limit / 1024 / 1024:g} MiB, setting {setting})",
        code="body_too_large",
    )
