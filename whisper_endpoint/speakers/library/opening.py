"""Open the speaker library for a loaded diarizer: its embedding model is the library's, SPEAKERS_DIR's
voiceprints (embedded at start-up) its read-only entries."""

from __future__ import annotations

import logging

from whisper_endpoint.speakers.library.settings import LibrarySettings
from whisper_endpoint.speakers.library.store import VoiceLibrary

logger = logging.getLogger(__name__)


def open_library(settings: LibrarySettings, jobs_db, diarizer, seeds: dict) -> VoiceLibrary | None:
    """None when there is no diarizer (nothing to name) or SPEAKERS_LIBRARY=false; a start-up error
    (ModelLoadError naming the file) when the file holds another embedding model's voices."""
    if diarizer is None or not settings.library:
        return None
    library = VoiceLibrary(settings.path(jobs_db), diarizer.embedding_model, max_speakers=settings.max, seeds=seeds)
    logger.info("speaker library %s: %d speakers", library.path, len(library.speakers()))
    return library
