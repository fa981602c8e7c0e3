"""Live speaker labels: each completed utterance's voice, embedded by the diarizer's model, takes the name
of the library voice it matches best (one utterance: ``LIVE_MATCH_THRESHOLD``), else the label of the
session's voice whose mean it is nearest to above the same threshold (a named voice included), else a new
``SPEAKER_NN``; labels stay the same for the whole session.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.speakers.names import match

# One utterance (1-5 s) sits further from a voiceprint than a whole recording's centroid does, so below
# MATCH_THRESHOLD (0.72). Chosen on fillets_cave and flite_meeting's turns against voices enrolled from
# fillets_barrel (docs/speaker_library.md): a right pairing's similarity was
# 0.62-0.88 (turns over 1.5 s), a wrong one's at most 0.56; another turn of the same voice 0.48-0.91.
LIVE_MATCH_THRESHOLD = 0.6
MIN_SPEECH_S = 1.0  # a shorter utterance gives no reliable embedding: it takes the last label
# Most unnamed voices one session holds: past it an utterance joins its nearest voice (a client that streams
# noise cannot grow the session's state without end).
MAX_SESSION_VOICES = 32


class LiveSpeakers:
    """One session's voices. ``embed``: samples -> vector; ``library``: -> name -> voiceprint (read per utterance,
    so a voice enrolled during the session is named from then on)."""

    def __init__(self, embed: Callable[[np.ndarray], np.ndarray], library: Callable[[], dict]):
        self.embed, self.library = embed, library
        self.voices: dict[str, np.ndarray] = {}  # label (a name or SPEAKER_NN) -> sum of its utterances' unit embeddings
        self.last: str | None = None

    def label(self, samples: np.ndarray) -> str | None:
        """Blocking (runs the embedding model): the utterance's speaker."""
        if len(samples) < MIN_SPEECH_S * SAMPLE_RATE:
            return self.last
        vector = _unit(self.embed(samples))
        named = match({"utterance": vector}, self.library(), threshold=LIVE_MATCH_THRESHOLD)
        if named:
            label = named[0].name
        else:
            label = max(self.voices, key=lambda known: float(_unit(self.voices[known]) @ vector), default=None)
            unnamed = sum(known.startswith("SPEAKER_") for known in self.voices)
            far = label is None or float(_unit(self.voices[label]) @ vector) < LIVE_MATCH_THRESHOLD
            if far and unnamed < MAX_SESSION_VOICES:
                label = f"SPEAKER_{unnamed:02d}"
        self.voices[label] = self.voices.get(label, 0) + vector
        self.last = label
        return label


def _unit(vector) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(vector)
    return vector / norm if np.isfinite(norm) and norm > 0 else vector
