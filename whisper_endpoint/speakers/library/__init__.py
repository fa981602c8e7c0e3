"""The speaker library: voices enrolled once (``/v1/speakers``), named in every diarized request.

``store.py`` keeps the entries in SQLite (and the voices of finished jobs, to enrol from); ``settings.py``
reads ``SPEAKERS_DB`` and ``SPEAKERS_MAX``; ``opening.py`` opens the library for a loaded diarizer, seeded
with ``SPEAKERS_DIR``'s read-only voices.
"""

from whisper_endpoint.speakers.library.store import LibraryError, Speaker, VoiceLibrary

__all__ = ["LibraryError", "Speaker", "VoiceLibrary"]
