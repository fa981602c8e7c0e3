"""HTTP serving: one FastAPI app for custom containers, SageMaker and OpenAI clients.

``whisper_endpoint.serving.app.create_app`` builds it; ``python -m whisper_endpoint.serving`` runs it.
Nothing is imported here, so ``inference.py`` can use the web-free modules (payloads, errors)
inside SageMaker's container without FastAPI.
"""
