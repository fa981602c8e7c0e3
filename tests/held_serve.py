"""``python -m whisper_endpoint.serving serve`` (the entry SageMaker starts), with the first decode held
until the file named by HOLD_RELEASE_FILE exists: a test sends SIGTERM while that decode is known to
run and the next request is known to wait, by order rather than by timing.

    python -m tests.held_serve serve
"""

import os
import sys
import time
from pathlib import Path

from whisper_endpoint.handler import EndpointHandler
from whisper_endpoint.serving.__main__ import main

RELEASE = Path(os.environ["HOLD_RELEASE_FILE"])
_run = EndpointHandler.run
_decodes = []


def _held_run(self, data, context=None):
    _decodes.append(data)
    if len(_decodes) == 1:  # the first decode waits on its worker thread; the event loop stays free
        while not RELEASE.exists():
            time.sleep(0.02)
    return _run(self, data, context)


EndpointHandler.run = _held_run

if __name__ == "__main__":
    main(sys.argv[1:])
