"""Completion notifications: POST the job's outcome to the URL given at submission.

SageMaker async inference's success/error notifications, as a plain webhook: the body is what
GET /jobs/{id} answers. Tried ``attempts`` times, 1 s, 2 s, 4 s ... apart; any 2xx counts as delivered.

A stranger's callback must not make the server call its own network (server-side request forgery):
the host is resolved once, every address it has must be public (unless JOBS_CALLBACK_ALLOW_INTERNAL),
and the connection goes to the address that was checked (urllib3 to that IP, with the URL's Host
header, and its name for TLS: SNI and the certificate check), so a second DNS answer cannot send it
elsewhere (DNS rebinding). Redirects are not followed: a 3xx is an undelivered callback.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
import time
from urllib.parse import SplitResult, unquote, urlsplit

import certifi
import urllib3

logger = logging.getLogger(__name__)


def internal_address(host: str, *, resolve: bool) -> str | None:
    """The loopback, private, link-local or otherwise non-public address ``host`` is (or resolves
    to), else None (also when it does not resolve)."""
    addresses = _addresses(host) if resolve else _literal(host)
    return next((str(ip) for ip in addresses if not ip.is_global), None)


def _literal(host: str) -> list:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        return []


def _addresses(host: str) -> list:
    """Every address ``host`` is or resolves to, in the resolver's order; [] when it does not resolve."""
    literal = _literal(host)
    if literal:
        return literal
    try:
        return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in socket.getaddrinfo(host, None)]
    except (OSError, ValueError):
        return []


def deliver(url: str, body: dict, *, timeout_s: float, attempts: int, allow_internal: bool = False) -> str:
    """Blocking (run it on a thread); returns the status recorded with the job."""
    parts = urlsplit(url)
    addresses = _addresses(parts.hostname or "")  # once: every attempt goes to the address checked here
    internal = next((str(ip) for ip in addresses if not ip.is_global), None)
    if internal is not None and not allow_internal:
        logger.warning("job %s: callback refused, its host is an internal address", body.get("id"))
        return f"refused: internal address {internal} (JOBS_CALLBACK_ALLOW_INTERNAL)"
    if not addresses:
        return "failed: the callback's host does not resolve"
    problem = ""
    for attempt in range(attempts):
        if attempt:
            time.sleep(2 ** (attempt - 1))
        try:
            status = _post(parts, str(addresses[0]), body, timeout_s)
        except urllib3.exceptions.HTTPError as exc:
            problem = type(exc).__name__
            continue
        if 200 <= status < 300:
            return "delivered"
        problem = f"HTTP {status}"
    logger.warning("job %s: callback not delivered after %d attempts (%s)", body.get("id"), attempts, problem)
    return f"failed: {problem}"


def _post(parts: SplitResult, address: str, body: dict, timeout_s: float) -> int:
    """POST ``body`` as JSON to the URL ``parts`` on ``address``: the status (redirects not followed)."""
    host = parts.hostname or ""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    headers = {"Host": _host_header(host, parts.port), "Content-Type": "application/json"}
    if parts.username is not None:  # user info in the URL: basic authentication, as browsers and requests do
        headers.update(urllib3.make_headers(basic_auth=f"{unquote(parts.username)}:{unquote(parts.password or '')}"))
    # TLS for the name (SNI, certificate), against the CA bundle requests uses.
    options = {"server_hostname": host, "assert_hostname": host, "ca_certs": certifi.where()} if https else {}
    pool_class = urllib3.HTTPSConnectionPool if https else urllib3.HTTPConnectionPool
    with pool_class(address, port, timeout=urllib3.Timeout(total=timeout_s), retries=False, **options) as pool:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        response = pool.urlopen("POST", path, body=json.dumps(body).encode(), headers=headers, redirect=False,
                                retries=False, assert_same_host=False)
        response.drain_conn()
        return response.status


def _host_header(host: str, port: int | None) -> str:
    name = f"[{host}]" if ":" in host else host
    return f"{name}:{port}" if port is not None else name
