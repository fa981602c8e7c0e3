"""Ray Serve deployment of the same ``EndpointHandler``: replicas, autoscaling bounds and CPU/GPU
fractions from ``ScaleSettings`` (``SCALE_*`` variables).

Each replica loads the models once and answers the toolkit payload on ``POST /`` (and ``/predict``):
the audio file or ``{"inputs": base64, "parameters": {...}}``, parameters also from the query string,
with the server's body limit (MAX_BODY_BYTES) and error mapping (each error's status, JSON body).
Ray Serve routes requests to replicas, queues at most ``max_ongoing_requests`` per replica and
scales between the bounds. The full route set (OpenAI, SageMaker, jobs) stays with ``server.py``.

    python -m whisper_endpoint.scale [--address auto] [--num-cpus 2]   # blocks; Ctrl-C stops it
    serve run whisper_endpoint.scale.serve_app:app_builder num_replicas=2   # Ray's own CLI
"""

from __future__ import annotations

import asyncio
from typing import Optional

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from whisper_endpoint.scale.cluster import usage_stats_off, worker_runtime_env


class ScaleSettings(BaseSettings):
    """Ray Serve deployment of the handler (environment variables ``SCALE_*``)."""

    model_config = SettingsConfigDict(env_prefix="SCALE_", populate_by_name=True, extra="ignore")

    num_replicas: int = Field(1, ge=1, description="Fixed replica count (when no autoscaling bounds are set).")
    min_replicas: Optional[int] = Field(None, ge=0, description="Autoscaling lower bound (0: scale to zero).")
    max_replicas: Optional[int] = Field(None, ge=1, description="Autoscaling upper bound.")
    target_ongoing_requests: float = Field(2.0, gt=0, description="Autoscaling target per replica.")
    max_ongoing_requests: int = Field(4, ge=1, description="Requests one replica holds; more wait in Serve's queue.")
    decode_concurrency: int = Field(1, ge=1, description="Decodes at once inside a replica (1 on CPU).")
    cpus_per_replica: float = Field(1.0, ge=0, description="Ray CPUs per replica (fractions allowed).")
    gpus_per_replica: float = Field(0.0, ge=0, description="GPUs per replica (0.5: two replicas share a GPU).")
    host: str = Field("0.0.0.0", description="Serve's HTTP proxy address.")
    port: int = Field(8000, ge=1, le=65535, description="Serve's HTTP proxy port.")
    route_prefix: str = Field("/", description="Serve's HTTP route prefix.")
    name: str = Field("whisper", description="The Serve deployment's name.")

    @model_validator(mode="after")
    def _bounds(self):
        if (self.min_replicas is None) != (self.max_replicas is None):
            raise ValueError("set both SCALE_MIN_REPLICAS and SCALE_MAX_REPLICAS for autoscaling, or neither")
        if self.min_replicas is not None and self.min_replicas > self.max_replicas:
            raise ValueError("SCALE_MIN_REPLICAS must not exceed SCALE_MAX_REPLICAS")
        return self

    def deployment_options(self) -> dict:
        options = {
            "name": self.name,
            "max_ongoing_requests": self.max_ongoing_requests,
            "ray_actor_options": {
                "num_cpus": self.cpus_per_replica,
                "num_gpus": self.gpus_per_replica,
                "runtime_env": worker_runtime_env(self.cpus_per_replica),
            },
        }
        if self.min_replicas is None:
            options["num_replicas"] = self.num_replicas
        else:
            options["autoscaling_config"] = {
                "min_replicas": self.min_replicas,
                "max_replicas": self.max_replicas,
                "target_ongoing_requests": self.target_ongoing_requests,
            }
        return options


class WhisperReplica:
    """One replica: the handler, loaded once; requests decoded on threads, ``decode_concurrency`` at a time."""

    def __init__(self, decode_concurrency: int = 1):
        from whisper_endpoint.core.config import ModelSettings
        from whisper_endpoint.handler import EndpointHandler
        from whisper_endpoint.serving.settings import ServerSettings

        self.handler = EndpointHandler(settings=ModelSettings().with_workers_for(decode_concurrency))
        self.server_settings = ServerSettings()
        self._slots = asyncio.Semaphore(decode_concurrency)

    async def __call__(self, request):
        from whisper_endpoint.adapters import http
        from whisper_endpoint.adapters.payloads import text_parameters
        from whisper_endpoint.serving.limits import read_body
        from whisper_endpoint.serving.responses import JSONResult

        headers = {"X-Replica": self._replica_id()}
        try:
            if request.method != "POST":
                from whisper_endpoint.adapters.errors import MethodNotAllowedError

                raise MethodNotAllowedError("POST the audio file or {\"inputs\": base64, \"parameters\": {...}}")
            body = await read_body(request, self.server_settings.max_body_bytes, self.server_settings.body_timeout_s)
            payload = http.payload(body, request.headers.get("content-type"),
                                   text_parameters(request.query_params.items()))
            async with self._slots:
                result = await asyncio.to_thread(self.handler, payload)
        except Exception as exc:
            reply = http.error_reply(exc)
            return JSONResult(reply.body, status_code=reply.status, headers={**headers, **reply.headers})
        return JSONResult(result, headers=headers)

    async def transcribe(self, payload: dict) -> dict:
        """For Python callers holding a ``DeploymentHandle`` (``handle.transcribe.remote(payload)``)."""
        async with self._slots:
            return await asyncio.to_thread(self.handler, payload)

    @staticmethod
    def _replica_id() -> str:
        from ray import serve

        return serve.get_replica_context().replica_id.unique_id


def build(settings: ScaleSettings | None = None):
    """The Serve application (``serve.run(build())``)."""
    usage_stats_off()
    from ray import serve

    settings = settings or ScaleSettings()
    deployment = serve.deployment(WhisperReplica, **settings.deployment_options())
    return deployment.bind(settings.decode_concurrency)


def app_builder(args: dict):
    """For ``serve run whisper_endpoint.scale.serve_app:app_builder key=value``: SCALE_* settings as args."""
    return build(ScaleSettings(**args))
