"""Tenants: whose jobs, results and voices a request may reach (issue 74).

Each API key belongs to a tenant: by default each key its own, ``API_TENANTS`` groups keys under a name,
and an administrator's key (``API_ADMIN_KEYS``) sees every tenant. What a tenant stores (jobs with their
results, uploads and kept blocks; the speaker library's voices; the voices a live session names) carries
its id, and another tenant is told that it does not exist (404, never 403: no oracle for what exists).
A server with no keys, or with one key and no groups, is the one tenant ``DEFAULT``, which also owns
whatever was stored before tenants existed (a group named ``default`` takes it over).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

DEFAULT = "default"
TENANT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # API_TENANTS' names
# Ids no name can be (':' is not in a name): a group named "admin" or "key-..." is not the administrators'
# or an ungrouped key's tenant.
ADMIN = ":admin"  # what an administrator's own requests are stored under


@dataclass(frozen=True)
class Tenant:
    id: str
    admin: bool = False

    def sees(self, owner: str) -> bool:
        """Whether this tenant may reach what ``owner`` stored."""
        return self.admin or owner == self.id

    @property
    def only(self) -> str | None:
        """The one owner whose rows this tenant reaches; None: every owner's (an administrator)."""
        return None if self.admin else self.id


ANYONE = Tenant(DEFAULT)  # a server without keys: one tenant


def of_key(key: str) -> str:
    """The tenant id of an ungrouped key: a digest (stable across restarts, and not the key)."""
    return "key:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]
