"""Speaker diarization backends: ``load_diarizer(reference)`` -> ``Diarizer.diarize(samples)``.

pyannote.audio 4 reports usage to an external server unless ``PYANNOTE_METRICS_ENABLED`` says
otherwise, and reads that variable when it is first imported. An inference server handling users'
audio should not phone home by default, so it is off here unless the deployer set it themselves.
Importing this package does not import pyannote (or torch); loading a diarizer does.
"""

from __future__ import annotations

import contextlib
import os
import warnings

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")

from whisper_endpoint.diarization.base import Diarization, Diarizer  # noqa: E402
from whisper_endpoint.diarization.loader import EMBEDDED, load_diarizer  # noqa: E402

__all__ = ["EMBEDDED", "Diarization", "Diarizer", "load_diarizer", "pyannote_quietly"]


@contextlib.contextmanager
def pyannote_quietly():
    """Import/load pyannote without its torchcodec warning.

    pyannote warns at import when torchcodec cannot load FFmpeg's shared libraries. We always hand
    it waveforms in memory, so its file decoding (and FFmpeg) is never used.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*torchcodec is not installed correctly")
        yield
