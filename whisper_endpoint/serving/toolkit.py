"""Routes of the Inference Endpoints toolkit (``POST /``, ``/predict``, ``GET /health``) and of
SageMaker's container contract (``GET /ping``, ``POST /invocations``): the handler's own payload in,
the handler's own response out.
"""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request

from whisper_endpoint.adapters import http
from whisper_endpoint.adapters.payloads import sagemaker_attributes, text_parameters
from whisper_endpoint.serving import auth
from whisper_endpoint.serving.auth import APIKeys
from whisper_endpoint.serving.limits import read_body
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import InferenceService


def health_router(service: InferenceService, keys: APIKeys) -> APIRouter:
    """The probes, open without a key: a failed load's reason only to a request with one."""
    router = APIRouter()

    @router.get("/health", summary="200 once the models are loaded, 503 before (or if loading failed)")
    async def health(request: Request) -> JSONResult:
        service.check_ready(reveal=keys.authorized(request))
        return JSONResult({"status": "ok", "model": service.model_id})

    @router.get("/ping", summary="SageMaker's health check: 200 once loaded, 503 before")
    async def ping(request: Request) -> JSONResult:
        service.check_ready(reveal=keys.authorized(request))
        return JSONResult({"status": "ok"})

    return router


def inference_router(service: InferenceService) -> APIRouter:
    router = APIRouter()
    settings = service.settings

    async def run(request: Request, limit: int, parameters: dict, context, setting: str = "MAX_BODY_BYTES"):
        service.check_ready()
        body = await read_body(request, limit, settings.body_timeout_s, setting)
        # A 25 MB JSON body takes a second to decode: on a thread, never on the event loop.
        payload = await anyio.to_thread.run_sync(http.payload, body, request.headers.get("content-type"), parameters)
        return JSONResult(await service.run(payload, context, receive=request.receive))

    @router.post("/", summary="Toolkit payload: JSON {inputs: base64, parameters} or the audio file")
    @router.post("/predict", summary="Same as POST /")
    async def predict(request: Request) -> JSONResult:
        context = service.context(settings.request_timeout_s, "REQUEST_TIMEOUT_S", tenant=auth.tenant(request).id)
        return await run(request, settings.max_body_bytes, text_parameters(request.query_params.items()), context)

    @router.post("/invocations", summary="SageMaker: JSON or audio (audio/x-audio, audio/*) bodies")
    async def invocations(request: Request) -> JSONResult:
        context = service.context(settings.sagemaker_request_timeout_s, "SAGEMAKER_REQUEST_TIMEOUT_S",
                                  tenant=auth.tenant(request).id)
        attributes = sagemaker_attributes(request.headers.get("x-amzn-sagemaker-custom-attributes"))
        parameters = text_parameters([*request.query_params.items(), *attributes])
        return await run(request, settings.sagemaker_max_body_bytes, parameters, context, "SAGEMAKER_MAX_BODY_BYTES")

    return router
