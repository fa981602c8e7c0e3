"""Live sessions decode through the server's one ``InferenceService``: the same model, the same
admission gate (MAX_CONCURRENCY, MAX_QUEUE) as file requests.

A committed utterance waits its turn in the gate like a file request. The interim decodes of open
utterances only run on a free slot with nobody waiting, so they never delay a file request or a
committed utterance; a busy server sends fewer deltas, not later results.
"""

from __future__ import annotations

import time
from functools import partial

import anyio
import numpy as np

from whisper_endpoint.core.decode_context import DISCONNECTED, DecodeContext
from whisper_endpoint.core.tenants import DEFAULT
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.serving.realtime.session import Decoder
from whisper_endpoint.serving.realtime.speakers import LiveSpeakers
from whisper_endpoint.serving.service import InferenceService


class ServiceDecoder(Decoder):
    def __init__(self, service: InferenceService, tenant: str = DEFAULT):
        self.service, self.tenant = service, tenant  # whose library voices name the session's speakers
        self._running: set[DecodeContext] = set()
        self._speakers: LiveSpeakers | None = None  # this session's voices, made on its first labelled utterance

    async def speaker(self, samples: np.ndarray) -> str | None:
        diarizer = getattr(self.service.handler, "diarizer", None)
        if diarizer is None:
            return None
        if self._speakers is None:
            library = self.service.library
            voiceprints = partial(library.voiceprints, self.tenant) if library is not None else dict
            self._speakers = LiveSpeakers(diarizer.embed_voice, voiceprints)
        return await anyio.to_thread.run_sync(self._speakers.label, samples)

    async def final(self, samples: np.ndarray, parameters: dict) -> tuple[str, str | None]:
        result = await self._decode(samples, parameters)
        return result.get("text", ""), result.get("language")

    async def interim(self, samples: np.ndarray, parameters: dict) -> str | None:
        gate = self.service.gate
        if gate.running >= gate.max_concurrency or gate.waiting:
            return None
        return (await self._decode(samples, parameters)).get("text", "")

    async def _decode(self, samples: np.ndarray, parameters: dict) -> dict:
        context = DecodeContext(listeners=(self._moved,), tenant=self.tenant)
        self._running.add(context)
        try:
            result = await self.service.run(_payload(samples, parameters), context)
        finally:
            self._running.discard(context)
        return result

    def _moved(self, progress) -> None:  # on the decode's thread: one float written
        self.active_at = time.monotonic()

    def stop(self) -> None:
        for context in list(self._running):
            context.cancel(DISCONNECTED)  # the client is gone from them, as from a closed request


def _payload(samples: np.ndarray, parameters: dict) -> dict:
    return {"inputs": {"array": samples, "sampling_rate": SAMPLE_RATE}, "parameters": parameters}
