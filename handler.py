"""Inference Endpoints entry point: the platform imports ``EndpointHandler`` from this file.

``EndpointHandler(path)`` loads the models once; ``handler({"inputs": ..., "parameters": {...}})``
answers one request. The code lives in the ``whisper_endpoint`` package (whisper_endpoint/handler.py).
"""

from whisper_endpoint.handler import EndpointHandler

__all__ = ["EndpointHandler"]
