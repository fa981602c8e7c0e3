"""Optional API keys for the standalone server: ``Authorization: Bearer <key>``, what the OpenAI SDK
(``api_key=``), ``huggingface_hub.InferenceClient`` (``api_key=``/``token=``) and curl send.

Off while no key is configured (``API_KEYS``, ``API_TENANTS``, ``API_ADMIN_KEYS``); each key belongs to
a tenant (core/tenants.py). When set, the inference routes answer 401 to a missing, malformed
or unknown key, always with the same message, so a caller learns nothing about the keys; health,
ping and metrics stay open for the platform's probes (``app.py`` decides which routes depend on this).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence

from fastapi import Depends, Request
from pydantic import SecretStr

from whisper_endpoint.core.errors import ClientError
from whisper_endpoint.core.tenants import ADMIN, ANYONE, DEFAULT, Tenant, of_key


class UnauthorizedError(ClientError):
    status = 401
    code = "invalid_api_key"

    def __init__(self):
        super().__init__("missing or invalid API key: send 'Authorization: Bearer <key>'")


def _digest(key: str) -> bytes:
    # Comparing fixed-length digests makes the comparison's time independent of the keys' lengths too.
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


class APIKeys:
    """The configured keys, kept as digests, each with its tenant (core/tenants.py); ``__call__`` is the
    FastAPI dependency, which leaves the caller's tenant in ``request.state.tenant``."""

    def __init__(self, keys: Sequence[SecretStr], *, tenants: Mapping[str, Sequence[SecretStr]] | None = None,
                 admins: Sequence[SecretStr] = ()):
        tenants = tenants or {}
        alone = len(keys) == 1 and not tenants  # a one-key server is the default tenant, as before tenants
        entries = [(key, Tenant(DEFAULT if alone else of_key(key.get_secret_value()))) for key in keys]
        entries += [(key, Tenant(name)) for name, group in tenants.items() for key in group]
        entries += [(key, Tenant(ADMIN, admin=True)) for key in admins]
        self._digests = [(_digest(key.get_secret_value()), tenant) for key, tenant in entries]

    @classmethod
    def from_settings(cls, settings) -> APIKeys:
        return cls(settings.api_keys, tenants=settings.api_tenants, admins=settings.api_admin_keys)

    def __bool__(self) -> bool:
        return bool(self._digests)

    def tenant_for(self, presented: str) -> Tenant | None:
        """The tenant of the key ``presented``, None if it is no key of ours."""
        digest = _digest(presented)
        # Compare with every key (no early exit), each in constant time.
        found = None
        for known, tenant in self._digests:
            if hmac.compare_digest(digest, known):
                found = tenant
        return found

    def matches(self, presented: str) -> bool:
        return self.tenant_for(presented) is not None

    def tenant_of(self, request: Request) -> Tenant | None:
        """The tenant of the request's Bearer key (``ANYONE`` when no key is configured); None: not admitted."""
        if not self:
            return ANYONE
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        return self.tenant_for(key.strip()) if scheme.lower() == "bearer" and key.strip() else None

    def authorized(self, request: Request) -> bool:
        """The request carries a valid Bearer key, or no key is configured (authentication is off)."""
        return self.tenant_of(request) is not None

    async def __call__(self, request: Request) -> None:
        tenant = self.tenant_of(request)
        if tenant is None:
            raise UnauthorizedError()
        request.state.tenant = tenant


def tenant(request: Request) -> Tenant:
    """The tenant the request's key belongs to (the dependency found it); ``ANYONE`` when keys are off."""
    return getattr(request.state, "tenant", ANYONE)


def dependencies(checker: APIKeys) -> list:
    """The route dependencies for ``checker``: none when no key is configured (authentication off)."""
    return [Depends(checker)] if checker else []
