"""The HTTP server's app: ``uvicorn server:app`` or ``python server.py serve`` (port 8080).

Built by ``whisper_endpoint.serving.app.create_app`` from ``ServerSettings`` (environment); the models
load in the background at start-up. The console script ``whisper-endpoint serve`` runs the same. See
docs/serving.md.
"""

import sys

from whisper_endpoint.serving.__main__ import serve
from whisper_endpoint.serving.app import create_app

app = create_app()

if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["serve"]):
        sys.exit("usage: python server.py [serve]")
    serve(app)
