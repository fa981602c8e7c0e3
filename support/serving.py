"""Real servers on loopback: uvicorn in a background thread (``live_server``, ``serve``), or the
server command as a process of its own (``ServerProcess``), and the waits around them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from support.paths import ROOT

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


def serve(app) -> str:
    """Start ``app`` on 127.0.0.1 for the process's life and return its base URL once it listens."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


class ServerProcess:
    """``python -m whisper_endpoint.serving`` as a process of its own on tiny.en, with ``env`` added
    (a job store, say), its output in ``log_folder/NAME.log``."""

    def __init__(self, name: str, log_folder: Path, **env: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log_folder / f"{name}.log"
        cache = os.environ.get("TEST_MODEL_CACHE", os.path.expanduser("~/.cache/whisper-endpoint"))
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "MODEL_CACHE_DIR": cache, "ASR_MODEL": "embedded:tiny.en",
               "PORT": str(self.port), "HOST": "127.0.0.1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
               **env}
        with self.log.open("w") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "whisper_endpoint.serving"], cwd=ROOT, env=env,
                                            stdout=log, stderr=subprocess.STDOUT)

    def ready(self) -> bool:
        import requests

        try:
            return requests.get(f"{self.url}/health", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def stop(self) -> None:
        stop_process(self.process)


def stop_process(process: subprocess.Popen, timeout: float = 30) -> None:
    """A server process stopped as a platform stops it: SIGTERM, then SIGKILL after ``timeout`` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()


def wait_until(condition, timeout: float = 20, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(interval)


class HeldHandler:
    """The real handler, whose decodes can be held after a chosen window: tests then decide what
    happens while a decode is in progress by order, not by timing.

    ``hold_at``: the window after which the first ``holds`` decodes wait (their decode context's hook
    blocks) until ``release`` is set or, when ``until_stopped``, their context is stopped (deadline,
    disconnect, shutdown), which then stops them there. ``reports`` records every progress report as
    (decode number, windows done, windows total), in order.
    """

    def __init__(self, handler, *, hold_at: int = 1, holds: int = 1, until_stopped: bool = True):
        self.handler, self.asr, self.diarizer = handler, handler.asr, handler.diarizer
        self.hold_at, self.holds, self.until_stopped = hold_at, holds, until_stopped
        self.held = threading.Event()  # a decode is waiting at hold_at
        self.release = threading.Event()
        self.contexts: list = []
        self.reports: list[tuple[int, int, int]] = []

    def __call__(self, data: dict) -> dict:
        return self.handler(data)

    def run(self, data: dict, context) -> dict:
        number = len(self.contexts)
        self.contexts.append(context)
        context.listen(lambda progress: self._reported(number, context, progress))
        return self.handler.run(data, context)

    def _reported(self, number: int, context, progress) -> None:
        self.reports.append((number, progress.windows_done, progress.windows_total))
        if number < self.holds and progress.windows_done == self.hold_at and progress.stage == "decoding":
            self.held.set()
            wait_until(lambda: self.release.is_set() or (self.until_stopped and context.stop_reason is not None),
                       timeout=60)

    def windows_done(self, number: int) -> int:
        return max((done for n, done, _ in self.reports if n == number), default=0)
