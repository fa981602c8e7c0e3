"""The SageMaker Hugging Face inference container's functions, re-exported by ``code/inference.py``.

The container's toolkit (sagemaker-huggingface-inference-toolkit) calls ``model_fn`` once, then per
request ``input_fn`` -> ``predict_fn`` -> ``output_fn``. The same handler as everywhere else runs in
between; errors keep their own status (415 for undecodable audio, 422 for a bad parameter...), set
on the model server's response, where the toolkit alone would answer 400 to every exception.

model.tar.gz (``python -m scripts.package_sagemaker`` builds it)::

    code/inference.py          the repository's inference.py (imports this module)
    code/requirements.txt      installed by the container at start-up
    code/handler.py, config.py, diarization_utils.py, whisper_endpoint/
    <model files>              optional: a Whisper model stored with the code (ASR_MODEL=/opt/ml/model)

Models and limits come from the SageMaker model's environment (ASR_MODEL, DIARIZATION_MODEL, HF_TOKEN,
MAX_AUDIO_SECONDS...). Bodies: JSON ``{"inputs": base64, "parameters": {...}}``, or the audio file
(``audio/x-audio``, ``audio/*``, ``application/octet-stream``) with parameters in
``X-Amzn-SageMaker-Custom-Attributes: language=ja;return_timestamps=word``. docs/serving.md lists the
model server's size and timeout variables.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from whisper_endpoint.adapters import http
from whisper_endpoint.adapters.payloads import sagemaker_attributes, text_parameters
from whisper_endpoint.core.errors import EndpointError

logger = logging.getLogger(__name__)

CUSTOM_ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"


@dataclass(frozen=True)
class Failure:
    """An error carried to ``output_fn``, which answers it with its own status."""

    error: EndpointError


def model_fn(model_dir, context=None):
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(path=model_dir)


def input_fn(input_data, content_type, context=None):
    body = input_data.encode("utf-8") if isinstance(input_data, str) else bytes(input_data)
    parameters = text_parameters(sagemaker_attributes(_request_header(context, CUSTOM_ATTRIBUTES)))
    try:
        return http.payload(body, content_type, parameters)
    except EndpointError as exc:
        return Failure(exc)


def predict_fn(data, model, context=None):
    if isinstance(data, Failure):
        return data
    try:
        return model(data)
    except Exception as exc:  # the same status as on every other route (500 "internal error" when unexpected)
        return Failure(http.as_endpoint_error(exc))


def output_fn(prediction, accept, context=None):
    if isinstance(prediction, Failure):
        error = prediction.error
        logger.info("request failed: %s %s", error.status, error.code)
        if context is not None:
            context.set_response_status(error.status, error.code)
        return http.dumps(http.error_reply(error).body)
    return http.dumps(prediction)


def _request_header(context, name: str) -> str | None:
    """A header of the (single) request, as the model server passes them; None outside one."""
    try:
        headers = context.request_processor[0].get_request_properties()
    except (AttributeError, IndexError, TypeError):
        return None
    wanted = name.lower()
    return next((value for key, value in headers.items() if str(key).lower() == wanted), None)

