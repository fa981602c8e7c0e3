"""From an HTTP request to the handler's payload and back, without a web framework: payloads (JSON or
audio bodies, text parameters), the errors only HTTP can cause, and the SageMaker container's functions.

The FastAPI server (``serving``), the async jobs and SageMaker's own container (``inference.py``)
share these, so nothing here imports FastAPI.
"""
