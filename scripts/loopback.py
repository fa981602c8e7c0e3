"""A uvicorn server on a free loopback port, in a daemon thread, for the evaluation scripts."""

from __future__ import annotations

import threading
import time

import uvicorn


def serve(app) -> str:
    """Start ``app`` on 127.0.0.1 and return its base URL (``http://127.0.0.1:PORT``) once it listens."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
