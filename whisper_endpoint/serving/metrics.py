"""Counters for ``GET /metrics``, in Prometheus' text format (version 0.0.4).

Queue depth and in-flight requests are what backlog-based autoscaling reads; the totals say what the
server has done since it started. Only inference routes (POST) are counted.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from whisper_endpoint.serving.limits import InferenceGate

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class Metrics:
    started: float = field(default_factory=time.time)
    responses: Counter = field(default_factory=Counter)  # (route family, status) -> count
    inference_seconds: float = 0.0
    inferences: int = 0
    audio_seconds: float = 0.0
    realtime_sessions: int = 0  # live WebSocket sessions open now

    def record_response(self, path: str, status: int) -> None:
        self.responses[(route_family(path), status)] += 1

    def record_inference(self, seconds: float, audio_seconds: float | None) -> None:
        self.inferences += 1
        self.inference_seconds += seconds
        self.audio_seconds += audio_seconds or 0.0

    def render(self, gate: InferenceGate, ready: bool, models: dict[str, dict] | None = None) -> str:
        """``models``: ``ModelPool.stats()``, each configured model's state."""
        models = models or {}
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)

        metric("whisper_queue_depth", "gauge", "Requests waiting for a decoding slot.", [("", gate.waiting)])
        metric("whisper_inflight_requests", "gauge", "Requests being decoded now.", [("", gate.running)])
        metric("whisper_max_concurrency", "gauge", "MAX_CONCURRENCY.", [("", gate.max_concurrency)])
        metric("whisper_max_queue", "gauge", "MAX_QUEUE.", [("", gate.max_queue)])
        metric("whisper_model_ready", "gauge", "1 once the models are loaded.", [("", int(ready))])
        metric("whisper_models_loaded", "gauge", "ASR models loaded now.",
               [("", sum(state["loaded"] for state in models.values()))])
        metric("whisper_model_loaded", "gauge", "1 while this model is loaded.",
               [(f'{{model="{_label(name)}"}}', int(state["loaded"])) for name, state in models.items()])
        metric("whisper_model_loads_total", "counter", "Times this model was loaded.",
               [(f'{{model="{_label(name)}"}}', state["loads"]) for name, state in models.items()])
        metric("whisper_model_load_seconds", "gauge", "How long this model's last load took.",
               [(f'{{model="{_label(name)}"}}', state["load_seconds"]) for name, state in models.items()
                if state["load_seconds"] is not None])
        metric(
            "whisper_requests_total", "counter", "Inference requests answered, by route family and status.",
            [(f'{{route="{route}",status="{status}"}}', n) for (route, status), n in sorted(self.responses.items())],
        )
        metric("whisper_rejected_total", "counter", "Requests refused with 429 (queue full).", [("", gate.rejected)])
        metric("whisper_inference_seconds_total", "counter", "Time spent decoding.", [("", self.inference_seconds)])
        metric("whisper_inferences_total", "counter", "Decodes that completed.", [("", self.inferences)])
        metric("whisper_audio_seconds_total", "counter", "Audio decoded, in seconds.", [("", self.audio_seconds)])
        uptime = time.time() - self.started
        metric("whisper_realtime_sessions", "gauge", "Live transcription sessions open now (GET /v1/realtime).",
               [("", self.realtime_sessions)])
        metric("whisper_uptime_seconds", "gauge", "Seconds since the server started.", [("", uptime)])
        return "\n".join(lines) + "\n"


def route_family(path: str) -> str:
    if path.startswith("/v1/"):
        return "openai"
    if path == "/invocations":
        return "sagemaker"
    return "toolkit"


def _label(value: str) -> str:
    """A Prometheus label value: backslash, quote and line break escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}"


class ResponseCounter:
    """ASGI middleware: count each POST's final status (errors included) into ``Metrics``."""

    def __init__(self, app, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return

        async def counting_send(message):
            if message["type"] == "http.response.start":
                self.metrics.record_response(scope["path"], message["status"])
            await send(message)

        await self.app(scope, receive, counting_send)
