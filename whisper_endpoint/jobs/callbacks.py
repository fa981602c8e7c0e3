"""Completion notifications: POST the job's outcome to the URL given at submission.

SageMaker async inference's success/error notifications, as a plain webhook: the body is what
GET /jobs/{id} answers. Tried ``attempts`` times, 1 s, 2 s, 4 s ... apart; any 2xx counts as delivered.
A callback owed when the server stops is delivered again after the restart (the worker keeps its state in
the store), so a receiver may get one twice: every delivery carries ``Idempotency-Key: <job id>:<status>``,
the same each time, besides the job's id in the body.

A stranger's callback must not make the server call its own network (server-side request forgery):
the host is resolved once, every address it has must be public (unless JOBS_CALLBACK_ALLOW_INTERNAL),
and the connection goes to the address that was checked (with the URL's Host header, and its name for
TLS: SNI and the certificate check), so a second DNS answer cannot send it elsewhere (DNS rebinding).
Redirects are not followed: a 3xx is an undelivered callback.

A callback host is a stranger too: the exchange is asyncio (no thread of the server's pool waits on
it, and shutdown cancels it at once), each attempt has one deadline for the whole exchange (connect,
send, the answer's status line and headers), only the status line and headers are read, at most
``MAX_RESPONSE_HEAD`` bytes, and the answer's body never is (h11 parses the HTTP).
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from urllib.parse import SplitResult, unquote, unquote_plus, urlsplit

import certifi
import h11

logger = logging.getLogger(__name__)

MAX_URL_CHARS = 2048
MAX_RESPONSE_HEAD = 16 * 1024  # the status line and headers of the callback host's answer
# IPv6 prefixes that reach IPv4 space through a translator or a tunnel (NAT64, local-use NAT64, 6to4,
# Teredo): `is_global` calls some of them public before Python 3.13, whatever IPv4 address they carry.
_TRANSLATED = tuple(ipaddress.ip_network(net) for net in ("64:ff9b::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32"))


def url_problem(url: str, *, allow_internal: bool) -> str | None:
    """What is wrong with ``url`` as a callback address (for a 422), or None."""
    if len(url) > MAX_URL_CHARS:
        return f"callback_url is {len(url)} characters long; at most {MAX_URL_CHARS} are accepted"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return "callback_url contains spaces or control characters; percent-encode them"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # an unclosed [IPv6 bracket, a port out of range
        return f"callback_url is not a valid URL ({exc}): {url[:200]!r}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"callback_url must be an absolute http:// or https:// URL, got {url[:200]!r}"
    if port == 0:
        return "callback_url's port must be 1-65535"
    # Literal addresses are refused here; names are checked when the callback is made (no DNS wait).
    if not allow_internal and _first_internal(_literal(parts.hostname)) is not None:
        return (f"callback_url points to an internal address ({parts.hostname}); this server only calls public "
                "addresses unless JOBS_CALLBACK_ALLOW_INTERNAL is set")
    return None


def credentials(url: str) -> list[str]:
    """What in a callback URL may be a webhook's secret, as written and decoded, for the logs to mask: the
    user info, and the path segments and query values that look like tokens (8+ characters with a letter
    and a digit, or 16+): ``/services/T0123456/B0123456/xyz...`` but not ``/hooks/transcripts``."""
    parts = urlsplit(url)
    found = [value for value in (parts.username, parts.password) if value]
    values = [pair.partition("=")[2] for pair in parts.query.split("&")]
    found += [part for part in (*parts.path.split("/"), *values) if _token_like(unquote_plus(part))]
    return [*found, *(unquote(value) for value in found), *(unquote_plus(value) for value in found)]


def _token_like(value: str) -> bool:
    mixed = any(ch.isalpha() for ch in value) and any(ch.isdigit() for ch in value)
    return len(value) >= 16 or (len(value) >= 8 and mixed)


def idempotency_key(body: dict) -> str:
    """The same for every delivery of one job's callback: a receiver drops a second one it already has."""
    return f"{body.get('id')}:{body.get('status')}"


def _first_internal(addresses: list) -> str | None:
    """The first loopback, private, link-local or otherwise non-public address, else None."""
    return next((str(ip) for ip in addresses if _internal(ip)), None)


def _internal(ip) -> bool:
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return _internal(ip.ipv4_mapped)
    return not ip.is_global or any(ip in net for net in _TRANSLATED if net.version == ip.version)


def _literal(host: str) -> list:
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1")]
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        return []


def _resolved(host: str) -> list:
    """Every address ``host`` is or resolves to, in the resolver's order; [] when it does not resolve."""
    literal = _literal(host)
    if literal:
        return literal
    try:
        return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in socket.getaddrinfo(host, None)]
    except (OSError, ValueError, UnicodeError):
        return []


async def deliver(url: str, body: dict, *, timeout_s: float, attempts: int, allow_internal: bool = False,
                  failed: Callable[[], Awaitable[None]] | None = None) -> str:
    """POST ``body`` to ``url``; returns the status recorded with the job. ``failed`` is awaited after each
    attempt that failed (the worker counts them in the store); one cancelled midway (shutdown) is not."""
    parts = urlsplit(url)
    try:  # once: every attempt goes to the address checked here (the lookup runs on the loop's executor)
        addresses = await asyncio.wait_for(
            asyncio.get_running_loop().run_in_executor(None, _resolved, parts.hostname or ""), timeout_s)
    except asyncio.TimeoutError:
        return "failed: the callback's host did not resolve in time"
    internal = _first_internal(addresses)
    if internal is not None and not allow_internal:
        logger.warning("job %s: callback refused, its host is an internal address", body.get("id"))
        return f"refused: internal address {internal} (JOBS_CALLBACK_ALLOW_INTERNAL)"
    if not addresses:
        return "failed: the callback's host does not resolve"
    data, key = json.dumps(body).encode(), idempotency_key(body)
    problem = "no attempt left (JOBS_CALLBACK_ATTEMPTS)"
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(2 ** (attempt - 1))
        try:
            async with asyncio.timeout(timeout_s):  # the whole exchange, however slowly the bytes come
                status = await _post(parts, str(addresses[0]), data, key)
        except TimeoutError:
            problem = f"no answer within {timeout_s:g} s (JOBS_CALLBACK_TIMEOUT_S)"
        except (OSError, h11.ProtocolError, _TooLarge) as exc:
            problem = str(exc) if isinstance(exc, _TooLarge) else type(exc).__name__
        else:
            if 200 <= status < 300:
                return "delivered"
            problem = f"HTTP {status}"
        if failed is not None:
            await failed()
    logger.warning("job %s: callback not delivered after %d attempts (%s)", body.get("id"), attempts, problem)
    return f"failed: {problem}"


class _TooLarge(Exception):
    pass


async def _post(parts: SplitResult, address: str, data: bytes, key: str) -> int:
    """POST ``data`` as JSON to the URL ``parts`` on ``address``: the answer's status (its body unread)."""
    host = parts.hostname or ""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    # TLS for the name (SNI, certificate), against the CA bundle requests uses.
    tls = ssl.create_default_context(cafile=certifi.where()) if https else None
    reader, writer = await asyncio.open_connection(address, port, ssl=tls, server_hostname=host if https else None)
    try:
        connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_RESPONSE_HEAD)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [("Host", _host_header(host, parts.port)), ("Content-Type", "application/json"),
                   ("Content-Length", str(len(data))), ("Idempotency-Key", key), ("Connection", "close")]
        if parts.username is not None:  # user info in the URL: basic authentication, as browsers and requests do
            user = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            headers.append(("Authorization", "Basic " + base64.b64encode(user).decode()))
        writer.write(connection.send(h11.Request(method="POST", target=path, headers=headers)))
        writer.write(connection.send(h11.Data(data=data)) + connection.send(h11.EndOfMessage()))
        await writer.drain()
        received = 0
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA:
                chunk = await reader.read(4096)
                received += len(chunk)
                if received > MAX_RESPONSE_HEAD:  # also 100-Continue answers without end
                    raise _TooLarge(f"the answer's head passed {MAX_RESPONSE_HEAD} bytes")
                connection.receive_data(chunk)  # b"": the host closed the connection
            elif isinstance(event, h11.Response):
                return event.status_code
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionResetError("closed without an answer")
    finally:
        writer.transport.abort()  # the body, if any, is never read


def _host_header(host: str, port: int | None) -> str:
    name = f"[{host}]" if ":" in host else host
    return f"{name}:{port}" if port is not None else name
