"""Optional API keys for the standalone server: ``Authorization: Bearer <key>``, what the OpenAI SDK
(``api_key=``), ``huggingface_hub.InferenceClient`` (``api_key=``/``token=``) and curl send.

Off while ``API_KEYS`` is empty. When set, the inference routes answer 401 to a missing, malformed
or unknown key, always with the same message, so a caller learns nothing about the keys; health,
ping and metrics stay open for the platform's probes (``app.py`` decides which routes depend on this).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from fastapi import Depends, Request
from pydantic import SecretStr

from whisper_endpoint.core.errors import ClientError


class UnauthorizedError(ClientError):
    status = 401
    code = "invalid_api_key"

    def __init__(self):
        super().__init__("missing or invalid API key: send 'Authorization: Bearer <key>'")


def _digest(key: str) -> bytes:
    # Comparing fixed-length digests makes the comparison's time independent of the keys' lengths too.
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


class APIKeys:
    """The configured keys, kept as digests; ``__call__`` is the FastAPI dependency."""

    def __init__(self, keys: Sequence[SecretStr]):
        self._digests = [_digest(key.get_secret_value()) for key in keys]

    def __bool__(self) -> bool:
        return bool(self._digests)

    def matches(self, presented: str) -> bool:
        digest = _digest(presented)
        # Compare with every key (no early exit), each in constant time.
        found = False
        for known in self._digests:
            found |= hmac.compare_digest(digest, known)
        return found

    def authorized(self, request: Request) -> bool:
        """The request carries a valid Bearer key, or no key is configured (authentication is off)."""
        if not self:
            return True
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and bool(key.strip()) and self.matches(key.strip())

    async def __call__(self, request: Request) -> None:
        if not self.authorized(request):
            raise UnauthorizedError()


def dependencies(checker: APIKeys) -> list:
    """The route dependencies for ``checker``: none when no key is configured (authentication off)."""
    return [Depends(checker)] if checker else []
