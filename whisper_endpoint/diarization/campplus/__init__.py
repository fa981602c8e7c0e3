"""CAM++ (3D-Speaker, Apache-2.0), the speaker-embedding network: every place that runs one loads it here.

``load(checkpoint=None, code=None)`` is the one way to a CAM++ network (in eval mode; by default the
checkpoint and the network code ``../checkpoints.py`` finds); ``fbank`` turns samples into its input and
``embed`` one stretch of speech into a 192-dim embedding. The embedded diarizer loads it through
``CamPlusPlusEmbedding`` (``pyannote_model.py``), the language rule's voices bare.

- ``network.py``: the network on torch alone (``load``, ``fbank``, ``embed``), without pyannote;
- ``pyannote_model.py``: it as pyannote.audio's embedding ``Model`` (``CamPlusPlusEmbedding``);
- ``onnx_trunk.py``: its trunk (everything before the statistics pooling) on ONNX Runtime, exported
  once per checkpoint through ``onnx_export.py``.

Importing this package imports torch, never pyannote (``pyannote_model.py`` does).
"""

from whisper_endpoint.diarization.campplus.network import (
    EMBEDDING_DIMENSION,
    embed,
    fbank,
    load,
)

__all__ = ["EMBEDDING_DIMENSION", "embed", "fbank", "load"]
