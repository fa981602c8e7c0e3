"""Run the server: ``whisper-endpoint serve`` (or ``python -m whisper_endpoint.serving [serve]``).

``serve`` is what SageMaker passes (``docker run IMAGE serve``); it is accepted and changes nothing.
Host, port (8080) and limits come from the environment (``ServerSettings``), the models from
``ModelSettings`` (ASR_MODEL, ...).
"""

from __future__ import annotations

import argparse
import logging

import uvicorn

from whisper_endpoint.serving import redaction
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings


def serve(app=None, settings: ServerSettings | None = None) -> None:
    uvicorn.Server(configured(app, settings)).run()  # SIGTERM / SIGINT: stop accepting, finish in-flight requests, exit


def configured(app=None, settings: ServerSettings | None = None) -> uvicorn.Config:
    """uvicorn's configuration for ``app``, with the logging set up (and masked) as ``serve`` runs it."""
    settings = settings or (app.state.service.settings if app is not None else ServerSettings())
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = uvicorn.Config(
        app or create_app(settings),
        host=settings.host,
        port=settings.port,
        workers=1,  # one model per process; MAX_CONCURRENCY sets the parallelism inside it
        timeout_graceful_shutdown=settings.graceful_timeout_s,
        log_level=settings.log_level,
    )
    redaction.install(redaction.environment_secrets())  # adds to the API keys create_app installed
    return config


def main(argv: list[str] | None = None, prog: str = "python -m whisper_endpoint.serving") -> None:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=["serve"], default="serve")
    parser.parse_args(argv)
    serve()


if __name__ == "__main__":
    main()
