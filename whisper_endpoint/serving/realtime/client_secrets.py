"""Short-lived client secrets for browsers, which cannot set an ``Authorization`` header on a
WebSocket: a server holding an API key asks ``POST /v1/realtime/client_secrets`` for one and hands it
to the page, which sends it as the ``openai-insecure-api-key.<secret>`` subprotocol (OpenAI's way).

Kept in memory as digests until they expire (a restart forgets them: they live minutes). Their shape
(``ek_`` and 32 URL-safe characters) is masked in every log line from the first store on, issued here
or not, live or expired (``redaction.recognise``): a client may send one in a URL or a header that a
library logs.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from whisper_endpoint.core.tenants import DEFAULT
from whisper_endpoint.serving import redaction
from whisper_endpoint.serving.realtime.config import SessionConfig
from whisper_endpoint.serving.realtime.events import Session

_CAPACITY = 10000  # secrets kept at once; the oldest goes first
PREFIX = "ek_"
_RANDOM_BYTES = 24  # 32 URL-safe characters
# What the log masks: the prefix, not inside a longer word, then URL-safe characters (16 or more, so a
# secret cut short or made by another server is masked too).
SHAPE = r"(?<![A-Za-z0-9])" + PREFIX + r"[A-Za-z0-9_-]{16,}"


class ExpiresAfter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    anchor: Literal["created_at"] = "created_at"
    seconds: int = Field(ge=10, le=7200)


class SecretRequest(BaseModel):
    """The body of ``POST /v1/realtime/client_secrets`` (OpenAI's GA shape)."""

    model_config = ConfigDict(extra="ignore")
    expires_after: Optional[ExpiresAfter] = None
    session: Optional[Session] = None


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class ClientSecrets:
    def __init__(self, default_ttl_s: int):
        self.default_ttl_s = default_ttl_s
        self._secrets: dict[bytes, tuple[float, SessionConfig, str]] = {}  # digest -> expiry, session, tenant
        redaction.recognise(SHAPE)

    def issue(self, request: SecretRequest, tenant: str = DEFAULT) -> dict:
        """A new secret of ``tenant``'s (the key that asked for it), its expiry (Unix seconds) and the session
        it opens."""
        ttl = request.expires_after.seconds if request.expires_after else self.default_ttl_s
        config = SessionConfig()
        if request.session is not None:
            config = config.updated(request.session.audio.input)
        self._prune()
        value = PREFIX + secrets.token_urlsafe(_RANDOM_BYTES)
        expires_at = int(time.time() + ttl)
        self._secrets[_digest(value)] = (expires_at, config, tenant)
        return {"value": value, "expires_at": expires_at, "session": config.describe()}

    def session_for(self, value: str) -> tuple[SessionConfig, str] | None:
        """The session settings and tenant of a live secret; None for an unknown or expired one."""
        entry = self._secrets.get(_digest(value))
        if entry is None or entry[0] <= time.time():
            return None
        return entry[1], entry[2]

    def _prune(self) -> None:
        now = time.time()
        for key in [key for key, (expires, *_) in self._secrets.items() if expires <= now]:
            del self._secrets[key]
        while len(self._secrets) >= _CAPACITY:
            del self._secrets[next(iter(self._secrets))]
