"""Server settings, read once from environment variables (names in capitals).

Model settings (ASR_MODEL, DEVICE, HF_TOKEN, ...) stay in ``config.ModelSettings``; these say how the
server admits and limits requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from whisper_endpoint.core.tenants import TENANT_NAME

MB = 1024 * 1024

# Where the platforms put the model repository: Inference Endpoints custom containers mount it at
# /repository, SageMaker extracts model.tar.gz into /opt/ml/model.
_PLATFORM_MODEL_DIRS = ("/repository", "/opt/ml/model")


def _default_model_dir() -> str:
    return next((path for path in _PLATFORM_MODEL_DIRS if Path(path).is_dir()), "")


class ServerSettings(BaseSettings):
    """How the HTTP server admits, limits and runs requests."""

    # hide_input_in_errors: a rejected API_KEYS value must not be printed in the start-up error.
    model_config = SettingsConfigDict(populate_by_name=True, extra="ignore", hide_input_in_errors=True)

    host: str = Field("0.0.0.0", description="Interface to bind.")
    # SageMaker always calls port 8080 (it may ask for another one with SAGEMAKER_BIND_TO_PORT).
    port: int = Field(
        8080, ge=1, le=65535, validation_alias=AliasChoices("PORT", "SAGEMAKER_BIND_TO_PORT", "port"),
        description="Port (SageMaker always calls 8080).",
    )
    model_dir: str = Field(
        default_factory=_default_model_dir,
        description="The endpoint repository handed to EndpointHandler(path): /repository or "
        "/opt/ml/model when present, else none.",
    )
    max_concurrency: int = Field(
        1, ge=1, le=64, description="Requests decoded at once; 1 suits a CPU (one decode uses all cores). Jobs have "
        "slots of their own (JOBS_CONCURRENCY); the ctranslate2 model gets a worker for each slot unless "
        "NUM_WORKERS is set."
    )
    max_queue: int = Field(
        32, ge=0, le=10000,
        description="Requests waiting for a slot; beyond it 429 with Retry-After (the expected wait, from recent "
        "decode times).",
    )
    max_body_bytes: int = Field(
        25 * MB, ge=1, description="Largest request body on /, /predict and /v1 (OpenAI's 25 MB)."
    )
    # SageMaker real-time endpoints accept 6 MB; batch transform sends SAGEMAKER_MAX_PAYLOAD_IN_MB
    # (up to 100) and asynchronous inference up to 1 GB, so those deployments raise this.
    sagemaker_max_body_bytes: int = Field(6 * MB, ge=1, description="Largest body on /invocations; raise it for batch "
                                          "transform (up to 100 MB) and asynchronous inference (up to 1 GB).")
    sagemaker_max_payload_in_mb: Optional[int] = Field(
        None, ge=1, description="Set by SageMaker batch transform; when SAGEMAKER_MAX_BODY_BYTES is not set, the "
        "/invocations limit follows it."
    )
    body_timeout_s: float = Field(
        30.0, gt=0, description="Longest wait for the next piece of a request body (408 past it)."
    )
    request_timeout_s: float = Field(
        0.0, ge=0, description="Deadline of a request on /, /predict and /v1 (0: none), counted from its "
        "arrival (upload and queue included); past it the decode stops at its next window and the answer is 504.",
    )
    # SageMaker real-time endpoints give up on an invocation after 60 s; the decode should not go on.
    sagemaker_request_timeout_s: float = Field(
        60.0, ge=0, description="Deadline of a request on /invocations (0: none; asynchronous inference and "
        "batch transform allow longer).",
    )
    graceful_timeout_s: float = Field(
        60.0, ge=0, description="On SIGTERM, how long in-flight and queued requests may still run."
    )
    log_level: str = Field("info", description="Python logging level of the server's log.")
    # Live transcription (GET /v1/realtime, a WebSocket; serving/realtime/).
    realtime_max_sessions: int = Field(
        4, ge=0, le=1000, description="Live sessions open at once; 0 turns /v1/realtime off."
    )
    realtime_idle_timeout_s: float = Field(
        60.0, gt=0, description="A live session without an event for this long, and whose decodes have not moved (a "
        "window, a transcript) for as long, is closed; its decodes stop at their next window."
    )
    realtime_max_session_s: float = Field(
        1800.0, gt=0, description="Longest live session (OpenAI's is 30 minutes); closed past it."
    )
    realtime_max_event_bytes: int = Field(
        4 * MB, ge=1024, lt=16 * MB,
        description="Largest client event (a JSON text frame); larger ones get an error event. Below "
        "uvicorn's 16 MiB WebSocket limit, past which the connection itself is closed (1009).",
    )
    realtime_max_utterance_s: float = Field(
        25.0, ge=2, le=29,
        description="An utterance this long is committed even while the speaker goes on: its whole "
        "audio, with padding, is decoded in one 30 s window.",
    )
    realtime_max_backlog_s: float = Field(
        120.0, ge=2, le=3600,
        description="The most audio a live session holds untranscribed (committed and waiting for its decode, "
        "or not committed yet); appends past it get an error event and are dropped.",
    )
    realtime_client_secret_ttl_s: int = Field(
        600, ge=10, le=7200, description="Default lifetime of a client secret (POST /v1/realtime/client_secrets)."
    )
    # POST /formats/{name}: a transcript rendered as a file (serving/formats_api.py).
    formats_max_body_bytes: int = Field(
        10 * MB, ge=1, description="Largest transcript on POST /formats/{name} (4 h of word timestamps: ~4 MB)."
    )
    formats_max_items: int = Field(
        100_000, ge=1, description="Most chunks, speaker turns and segments, together, in one transcript there."
    )
    # The web page (GET /ui; serving/ui.py).
    ui_enabled: bool = Field(True, description="Serve the web page at /ui (and redirect GET / there).")
    ui_jobs_after_s: float = Field(
        60.0, ge=0, description="The page sends files longer than this through the jobs API (progress that "
        "survives a reload) when jobs are on; shorter ones to POST /predict. 0: every file as a job; without jobs "
        "(JOBS_ENABLED=false) every file goes to POST /predict.",
    )
    # Several ASR models (serving/model_pool.py); unset: the one model of ASR_MODEL.
    asr_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Models this server serves, chosen per request by 'model': comma-separated "
        "[name=]reference[?backend=...&compute_type=...] (e.g. base=embedded:base,tiny=embedded:tiny.en); the "
        "first is the default (and what 'whisper-1' means). Unset: ASR_MODEL alone.",
    )
    preload_models: Optional[Annotated[list[str], NoDecode]] = Field(
        None, description="Names loaded at start-up and never unloaded (comma-separated; unset: the first model).",
    )
    max_loaded_models: int = Field(
        0, ge=0, le=64, description="Most models loaded at once; the least recently used idle one is unloaded "
        "first. 0: no bound.",
    )
    model_idle_unload_s: float = Field(
        300.0, ge=0, description="An unpinned model unused this long is unloaded. 0: never.",
    )
    # Secrets: never printed (SecretStr); comma-separated in the environment (API_KEYS=key1,key2).
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Bearer keys accepted on the inference routes, each its own tenant; empty (and no API_TENANTS "
        "or API_ADMIN_KEYS): no authentication, one tenant.",
    )
    api_tenants: dict[str, list[SecretStr]] = Field(
        default_factory=dict,
        description='Keys grouped into named tenants, as JSON: {"acme": ["key1", "key2"], "globex": ["key3"]}. '
        "A tenant's keys share its jobs and speakers; a tenant named 'default' also owns what was stored before "
        "tenants existed.",
    )
    api_admin_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Keys of administrators: they see and manage every tenant's jobs and speakers.",
    )

    @field_validator("asr_models")
    @classmethod
    def _valid_models(cls, entries: list[str]):
        from whisper_endpoint.serving.model_pool import parse_models

        parse_models(entries)  # a bad entry is a start-up error naming it
        return entries

    @field_validator("api_keys", "api_admin_keys", "asr_models", "preload_models", mode="before")
    @classmethod
    def _comma_separated(cls, value):
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("api_keys", "api_admin_keys")
    @classmethod
    def _long_keys(cls, keys: list[SecretStr]):
        # Short keys can be guessed, and the log filter only masks values of 8+ characters.
        if any(len(key.get_secret_value()) < 16 for key in keys):
            raise ValueError("every API key must be at least 16 characters long")
        return keys

    @field_validator("api_tenants")
    @classmethod
    def _named_tenants(cls, tenants: dict[str, list[SecretStr]]):
        for name, keys in tenants.items():
            if not TENANT_NAME.fullmatch(name):
                raise ValueError(f"a tenant's name is 1-64 letters, digits, '.', '_' or '-': {name!r} is not")
            cls._long_keys(keys)
        return tenants

    @model_validator(mode="after")
    def _one_tenant_a_key(self):
        keys = [key.get_secret_value() for key in self.all_keys()]
        if len(keys) != len(set(keys)):
            raise ValueError("an API key appears twice among API_KEYS, API_TENANTS and API_ADMIN_KEYS: "
                             "a key belongs to one tenant")
        return self

    def all_keys(self) -> list[SecretStr]:
        """Every accepted key: API_KEYS, API_TENANTS' and API_ADMIN_KEYS."""
        return [*self.api_keys, *(key for keys in self.api_tenants.values() for key in keys), *self.api_admin_keys]

    @model_validator(mode="after")
    def _sagemaker_payload(self):
        explicit = "sagemaker_max_body_bytes" in self.model_fields_set
        if self.sagemaker_max_payload_in_mb is not None and not explicit:
            self.sagemaker_max_body_bytes = self.sagemaker_max_payload_in_mb * MB
        return self
