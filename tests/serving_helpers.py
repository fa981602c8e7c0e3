"""A real uvicorn server on a free loopback port, in a background thread, for the serving tests."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import uvicorn

# The clip most serving tests send, and what tiny.en hears in it.
CLIP = "asterisk_all-circuits-busy-now.flac"
TEXT = "All circuits are busy now."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    def __init__(self, app, *, graceful_timeout_s: float = 30):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning",
            timeout_graceful_shutdown=graceful_timeout_s, lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    def start(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """What SIGTERM does: stop accepting, finish in-flight requests, run the lifespan shutdown."""
        self.server.should_exit = True
        self.thread.join(timeout=60)


@contextmanager
def live_server(app, **options):
    server = LiveServer(app, **options).start()
    try:
        yield server
    finally:
        server.stop()


def wait_until(condition, timeout: float = 20, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(interval)
