"""Which spans of speech one voice said: the prior that keeps a speaker in one language (issue 58).

A span's own language detection is a weak witness (a Czech line comes out Slovak or Polish), but a
speaker usually keeps one language through a conversation. So when a request may be in several
languages, each VAD span gets a CAM++ speaker embedding (the embedded diarizer's network, bare: loaded
on first use, without pyannote) and the spans are grouped by voice: average-linkage clustering of
their cosine distances, cut at ``VOICE_DISTANCE``. The diarization runs alongside the ASR, so its
speakers are not known when the languages are decided; grouping the spans is a small diarization of
its own, over spans the language detection already has.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import torch
from scipy.cluster.hierarchy import fcluster, linkage

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.threads import torch_threads
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.diarization import campplus as campplus_network

logger = logging.getLogger(__name__)

VOICE_DISTANCE = 0.5  # cosine distance between the voices' average embeddings that still joins them
MIN_VOICE_S = 2.0  # less speech than this is not a voice of its own: it joins the nearest one
MIN_SAMPLES = SAMPLE_RATE // 10  # a shorter span is taken with what follows it, or padded (CAM++ needs frames)


class SpanVoices:
    """``voices(audio, spans)``: a voice label per span (start, end in seconds of ``audio``), or None
    when CAM++ is not installed (then the languages are decided without the prior)."""

    def __init__(self, threads: int = 1):
        self.threads = threads  # torch's, for CAM++ (core/threads.py: one where cores are shared)
        self._network = None
        self._unavailable = False
        self._lock = threading.Lock()

    def __call__(self, audio: np.ndarray, spans: list[tuple[float, float]]) -> list[int] | None:
        network = self._loaded()
        if network is None:
            return None
        if len(spans) < 2:
            return [0] * len(spans)
        with torch.inference_mode(), torch_threads(self.threads):
            embeddings = np.stack([_embedding(network, audio, start, end) for start, end in spans])
        return labels(embeddings, [end - start for start, end in spans])

    def _loaded(self):
        with self._lock:
            if self._network is None and not self._unavailable:
                try:
                    self._network = campplus_network.load()
                except (ModelLoadError, ImportError) as exc:
                    logger.warning("languages are decided without the speakers' voices: %s", exc)
                    self._unavailable = True
            return self._network


def labels(embeddings: np.ndarray, seconds: list[float]) -> list[int]:
    """One label per embedding (of a span lasting ``seconds``): the same for one voice. A group with less
    than ``MIN_VOICE_S`` of speech joins the group nearest to it (its mean embedding's cosine), as
    pyannote's clustering gives clusters under its minimum size to the nearest large one: a CAM++
    embedding of one short line is a weak witness of a voice."""
    if len(embeddings) < 2:
        return [0] * len(embeddings)
    found = fcluster(linkage(embeddings, "average", metric="cosine"), VOICE_DISTANCE, "distance")
    seconds = np.asarray(seconds)
    groups = {int(label): found == label for label in np.unique(found)}
    large = [label for label, mine in groups.items() if seconds[mine].sum() >= MIN_VOICE_S]
    if not large:
        return [int(label) for label in found]
    means = {label: _unit(embeddings[mine].mean(axis=0)) for label, mine in groups.items()}
    joined = {label: label if label in large else max(large, key=lambda big: float(means[label] @ means[big]))
              for label in groups}
    return [joined[int(label)] for label in found]


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / (np.linalg.norm(vector) or 1.0)


def _embedding(network, audio: np.ndarray, start: float, end: float) -> np.ndarray:
    first = int(start * SAMPLE_RATE)
    piece = audio[first: max(int(end * SAMPLE_RATE), first + MIN_SAMPLES)]
    piece = np.pad(piece, (0, max(0, MIN_SAMPLES - len(piece))))  # a span at the very end of the audio
    features = campplus_network.fbank(torch.from_numpy(np.ascontiguousarray(piece, dtype=np.float32)))
    return campplus_network.embed(network, features).numpy()
