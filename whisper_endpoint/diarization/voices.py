"""A voice's embedding with the diarizer's own speaker embedding model, for naming known speakers.

Enrolment clips must land in the space the pipeline's speaker centroids live in, so they go through
the model the pipeline embeds with: CAM++ for the embedded pipeline (its ``embedding_network``), the
pipeline's pretrained embedding (pyannote's ``_embedding`` wrapper: WeSpeaker for community-1 and 3.1)
for any other pyannote pipeline. speaches' diarization route takes the same wrapper for its known
speakers. The whole clip is one embedding: the caller gives speech of one voice only.
"""

from __future__ import annotations

import numpy as np


def embed_voice(pipeline, samples: np.ndarray) -> np.ndarray:
    """One embedding (1-D float64) of 16 kHz mono ``samples``, on the pipeline's device."""
    import torch

    waveform = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))[None, None]
    network = getattr(pipeline, "embedding_network", None)
    if network is not None:  # the embedded pipeline: CAM++ directly
        device = next(network.parameters()).device
        with torch.inference_mode():
            return network(waveform.to(device))[0].cpu().numpy().astype(np.float64)
    return np.asarray(pipeline._embedding(waveform), dtype=np.float64)[0]


def embedding_model_name(pipeline) -> str:
    """What a client needs to know to compare vectors: which model made them."""
    if getattr(pipeline, "embedding_network", None) is not None:
        return "CAM++ (3D-Speaker campplus_cn_en_common, 192-dim)"
    embedding = getattr(pipeline, "embedding", None)
    if isinstance(embedding, str):
        return embedding
    if isinstance(embedding, dict):  # {"checkpoint": ..., "subfolder": ...}
        return "/".join(str(embedding[key]) for key in ("checkpoint", "subfolder") if embedding.get(key))
    return type(getattr(pipeline, "_embedding", embedding)).__name__
