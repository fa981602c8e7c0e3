"""Completion notifications: POST the job's outcome to the URL given at submission.

SageMaker async inference's success/error notifications, as a plain webhook: the body is what
GET /jobs/{id} answers. Tried ``attempts`` times, 1 s, 2 s, 4 s ... apart; any 2xx counts as delivered.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from urllib.parse import urlsplit

import requests

logger = logging.getLogger(__name__)


def internal_address(host: str, *, resolve: bool) -> str | None:
    """The loopback, private, link-local or otherwise non-public address ``host`` is (or resolves
    to), else None. A stranger's callback must not make the server call its own network (cloud
    metadata at 169.254.169.254, services on loopback): server-side request forgery."""
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return "127.0.0.1"
    try:
        candidates = [ipaddress.ip_address(host)]
    except ValueError:
        if not resolve:
            return None
        try:
            candidates = [ipaddress.ip_address(info[4][0]) for info in socket.getaddrinfo(host, None)]
        except (OSError, ValueError):
            return None  # unresolvable: the POST fails and is recorded as such
    return next((str(ip) for ip in candidates if not ip.is_global), None)


def deliver(url: str, body: dict, *, timeout_s: float, attempts: int, allow_internal: bool = False) -> str:
    """Blocking (run it on a thread); returns the status recorded with the job."""
    # Checked again at delivery: a name can resolve elsewhere than when the job was submitted.
    address = None if allow_internal else internal_address(urlsplit(url).hostname or "", resolve=True)
    if address is not None:
        logger.warning("job %s: callback refused, its host is an internal address", body.get("id"))
        return f"refused: internal address {address} (JOBS_CALLBACK_ALLOW_INTERNAL)"
    problem = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(2 ** (attempt - 1))
        try:
            response = requests.post(url, json=body, timeout=timeout_s)
        except requests.RequestException as exc:
            problem = type(exc).__name__
            continue
        if 200 <= response.status_code < 300:
            return "delivered"
        problem = f"HTTP {response.status_code}"
    logger.warning("job %s: callback not delivered after %d attempts (%s)", body.get("id"), attempts, problem)
    return f"failed: {problem}"
