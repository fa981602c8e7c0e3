"""``python -m whisper_endpoint``: the ``transcribe`` command (whisper_endpoint/cli/transcribe.py)."""

import sys

from whisper_endpoint.cli.transcribe import main

if __name__ == "__main__":
    sys.exit(main())
