"""HTTP serving: one FastAPI app for custom containers, SageMaker and OpenAI clients.

``whisper_endpoint.serving.app.create_app`` builds it; ``whisper-endpoint serve`` (or
``python -m whisper_endpoint.serving``) runs it. The web-free pieces it shares with SageMaker's
container and the jobs live in ``whisper_endpoint.adapters``.
"""
