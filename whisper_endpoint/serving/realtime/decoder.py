"""Live sessions decode through the server's one ``InferenceService``: the same model, the same
admission gate (MAX_CONCURRENCY, MAX_QUEUE) as file requests.

A committed utterance waits its turn in the gate like a file request. The interim decodes of open
utterances only run on a free slot with nobody waiting, so they never delay a file request or a
committed utterance; a busy server sends fewer deltas, not later results.
"""

from __future__ import annotations

import numpy as np

from whisper_endpoint.audio import TARGET_RATE
from whisper_endpoint.serving.realtime.session import Decoder
from whisper_endpoint.serving.service import InferenceService


class ServiceDecoder(Decoder):
    def __init__(self, service: InferenceService):
        self.service = service

    async def final(self, samples: np.ndarray, parameters: dict) -> str:
        result = await self.service.run(_payload(samples, parameters))
        return result.get("text", "")

    async def interim(self, samples: np.ndarray, parameters: dict) -> str | None:
        gate = self.service.gate
        if gate.running >= gate.max_concurrency or gate.waiting:
            return None
        result = await self.service.run(_payload(samples, parameters))
        return result.get("text", "")


def _payload(samples: np.ndarray, parameters: dict) -> dict:
    return {"inputs": {"array": samples, "sampling_rate": TARGET_RATE}, "parameters": parameters}
