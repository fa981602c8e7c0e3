"""``GET /v1/realtime?intent=transcription`` (WebSocket) and ``POST /v1/realtime/client_secrets``.

Before the upgrade: the API key (``Authorization: Bearer``, or for browsers a client secret or key as
the ``openai-insecure-api-key.<value>`` subprotocol), the model's readiness and REALTIME_MAX_SESSIONS;
a refusal is an HTTP answer (401, 503, 429) with the usual JSON error. After it: one event per text
frame; anything wrong with an event becomes an ``error`` event and the session goes on. The session
ends after REALTIME_IDLE_TIMEOUT_S without an event (waiting for transcripts that keep coming is not
idling; a decode that answers nothing for that long is) or REALTIME_MAX_SESSION_S in all.

The log: a refusal for a missing or wrong key or client secret is one WARNING line, at most once per
client address and minute (``RefusalLog``), never with what was presented: anyone can knock, and each
knock used to write three lines, one of them an ERROR. uvicorn's own lines about a refusal are dropped
(``_QuietRefusals``): its ``"WebSocket /v1/realtime?..." 401`` and the ``websockets`` library's
``connection rejected``, and for every refusal its ``ASGI callable returned without completing
handshake.``, a false ERROR: uvicorn's default WebSocket protocol (``websockets-sansio``, 0.54) does not
count a denial response as the end of the handshake (Kludex/uvicorn PR 3138, open).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from collections import OrderedDict
from dataclasses import replace

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.websockets import WebSocketState

from whisper_endpoint.adapters.errors import QueueFullError
from whisper_endpoint.adapters.http import error_reply
from whisper_endpoint.core import bounded_json
from whisper_endpoint.core.errors import EndpointError, InvalidParameterError
from whisper_endpoint.core.tenants import ANYONE
from whisper_endpoint.serving import auth, redaction
from whisper_endpoint.serving.auth import APIKeys, UnauthorizedError
from whisper_endpoint.serving.limits import read_body
from whisper_endpoint.serving.realtime import events
from whisper_endpoint.serving.realtime.client_secrets import ClientSecrets, SecretRequest
from whisper_endpoint.serving.realtime.config import SessionConfig
from whisper_endpoint.serving.realtime.decoder import ServiceDecoder
from whisper_endpoint.serving.realtime.session import RealtimeSession
from whisper_endpoint.serving.responses import JSONResult
from whisper_endpoint.serving.service import InferenceService

logger = logging.getLogger(__name__)
_KEY_PROTOCOL = "openai-insecure-api-key."
_SECRET_BODY_BYTES = 64 * 1024
_UVICORN_LOGGER = "uvicorn.error"  # where uvicorn (and the websockets library it drives) logs WebSockets
# Each refused connection's task, with its refusal: set before the denial response; uvicorn logs about it
# in that same task (kept no longer than the task).
_refused: weakref.WeakKeyDictionary[asyncio.Task, EndpointError] = weakref.WeakKeyDictionary()


class Refused(Exception):
    def __init__(self, error: EndpointError):
        self.error = error


class RefusalLog:
    """Refused WebSockets (no valid key or client secret), logged at most once per client address and
    ``period_s``: the first refusal of a period writes a WARNING line, the others are counted and the
    count goes in the address's next line.

    At most ``capacity`` addresses are held (each for its period, then dropped as room is needed). Past
    that, while every address held was refused within its period, refusals from other addresses are not
    held each: they are counted together and logged in one line at most once per period. So a flood
    from many addresses holds ``capacity`` entries and writes at most ``capacity + 1`` lines a period.
    """

    def __init__(self, *, period_s: float = 60.0, capacity: int = 1024, clock=time.monotonic):
        self.period_s, self.capacity, self.clock = period_s, capacity, clock
        self._addresses: OrderedDict[str, list] = OrderedDict()  # address -> [period's start, refusals not logged]
        self._others = [float("-inf"), 0]  # past capacity, all addresses together: [period's start, not logged]

    def refused(self, address: str) -> None:
        now = self.clock()
        held = self._addresses.get(address)
        if held is not None and now - held[0] < self.period_s:
            held[1] += 1
            return
        if held is None and len(self._addresses) >= self.capacity:
            self._drop_expired(now)
        if held is None and len(self._addresses) >= self.capacity:
            self._refused_past_capacity(now)
            return
        self._addresses.pop(address, None)  # back at the end: the entries stay in their periods' order
        self._addresses[address] = [now, 0]
        unlogged = f"; {held[1]} more since its last line" if held is not None and held[1] else ""
        logger.warning("refused a WebSocket from %s: no valid API key or client secret (at most one line per "
                       "address and %g s%s)", address, self.period_s, unlogged)

    def _drop_expired(self, now: float) -> None:
        while self._addresses:
            address, (start, _) = next(iter(self._addresses.items()))
            if now - start < self.period_s:
                return
            del self._addresses[address]

    def _refused_past_capacity(self, now: float) -> None:
        others = self._others
        if now - others[0] < self.period_s:
            others[1] += 1
            return
        unlogged = f"; {others[1]} more since the last such line" if others[1] else ""
        others[0], others[1] = now, 0
        logger.warning("refused a WebSocket: no valid API key or client secret, from one of more than %d "
                       "addresses refused in %g s (one line for all of them per %g s%s)",
                       self.capacity, self.period_s, self.period_s, unlogged)


def _task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # a line logged outside any event loop
        return None


class _QuietRefusals(logging.Filter):
    """Drops uvicorn's lines about a WebSocket this app refused (see the module's docstring): they are
    logged in the connection's task, for which ``_refused`` holds the refusal."""

    _ANY = ("ASGI callable returned without completing handshake.",)
    _UNAUTHORIZED = ('%s - "WebSocket %s" %d', "connection rejected (%d %s)")

    def filter(self, record: logging.LogRecord) -> bool:
        task = _task()
        error = _refused.get(task) if task is not None else None
        if error is None:
            return True
        if record.msg in self._ANY:
            return False
        return not (isinstance(error, UnauthorizedError) and record.msg in self._UNAUTHORIZED)


_QUIET = _QuietRefusals()


def router(service: InferenceService, keys: APIKeys, protected: list) -> APIRouter:
    settings = service.settings
    secrets = ClientSecrets(settings.realtime_client_secret_ttl_s)
    refusals = RefusalLog()
    redaction.recognise(r"(?<=" + _KEY_PROTOCOL.replace(".", r"\.") + r")[^\s,;\"']+")  # a key or secret offered
    logging.getLogger(_UVICORN_LOGGER).addFilter(_QUIET)  # once: the same filter
    api = APIRouter()

    @api.post("/v1/realtime/client_secrets", dependencies=protected,
              summary="A short-lived secret a browser sends as its WebSocket subprotocol")
    async def client_secrets(request: Request) -> JSONResult:
        body = await read_body(request, _SECRET_BODY_BYTES, settings.body_timeout_s)
        try:
            return JSONResult(secrets.issue(SecretRequest.model_validate_json(body or b"{}"), auth.tenant(request).id))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise InvalidParameterError(f"client_secrets: {where}: {first['msg']}") from None
        except events.EventError as exc:
            raise InvalidParameterError(exc.message) from None

    @api.websocket("/v1/realtime")
    async def realtime(websocket: WebSocket) -> None:
        try:
            config, tenant = _admit(websocket, service, keys, secrets, service.metrics.realtime_sessions)
        except Refused as refused:
            _refused[asyncio.current_task()] = refused.error
            if isinstance(refused.error, UnauthorizedError):
                refusals.refused(websocket.client.host if websocket.client else "(unknown address)")
            reply = error_reply(refused.error, openai=True)
            await websocket.send_denial_response(JSONResult(reply.body, reply.status, reply.headers))
            return
        service.metrics.realtime_sessions += 1  # the count REALTIME_MAX_SESSIONS limits, also on /metrics
        try:
            await _serve(websocket, service, config, tenant)
        finally:
            service.metrics.realtime_sessions -= 1

    return api


def _admit(websocket: WebSocket, service: InferenceService, keys: APIKeys, secrets: ClientSecrets,
           open_now: int) -> tuple[SessionConfig, str]:
    """The new session's settings and tenant, or ``Refused`` with the reason."""
    config, tenant = _authorized(websocket, keys, secrets)  # first: a refusal says nothing more to a stranger
    intent = websocket.query_params.get("intent", "transcription")
    if intent != "transcription":
        raise Refused(InvalidParameterError(
            f"intent={intent[:50]!r}: this server has transcription sessions only (intent=transcription)"))
    try:
        service.check_ready()
    except EndpointError as exc:
        raise Refused(exc) from None
    limit = service.settings.realtime_max_sessions
    if open_now >= limit:
        raise Refused(QueueFullError(
            f"{open_now} live sessions are open, the most this server allows (REALTIME_MAX_SESSIONS={limit}); "
            "retry later", retry_after=5))
    return replace(config, id=events.new_id("sess")), tenant


def _authorized(websocket: WebSocket, keys: APIKeys, secrets: ClientSecrets) -> tuple[SessionConfig, str]:
    """The session's settings and its tenant (the key's, or the one its client secret was issued to)."""
    offered = [p[len(_KEY_PROTOCOL):] for p in websocket.scope.get("subprotocols", []) if p.startswith(_KEY_PROTOCOL)]
    for value in offered:  # a client secret brings the session settings it was issued with
        issued = secrets.session_for(value)
        if issued is not None:
            return issued
    if not keys:
        return SessionConfig(), ANYONE.id
    scheme, _, key = websocket.headers.get("authorization", "").partition(" ")
    presented = [key.strip()] if scheme.lower() == "bearer" and key.strip() else []
    tenant = next((found for value in presented + offered if (found := keys.tenant_for(value)) is not None), None)
    if tenant is not None:
        return SessionConfig(), tenant.id
    raise Refused(UnauthorizedError())


async def _serve(websocket: WebSocket, service: InferenceService, config: SessionConfig, tenant: str) -> None:
    settings = service.settings
    offered = websocket.scope.get("subprotocols", [])
    await websocket.accept(subprotocol="realtime" if "realtime" in offered else None)
    lock = asyncio.Lock()

    async def send(event: dict) -> None:
        # A transcript that is ready after the client left (or after the close) has nobody to go to.
        async with lock:
            if WebSocketState.DISCONNECTED in (websocket.client_state, websocket.application_state):
                return
            try:
                await websocket.send_text(json.dumps(event))
            except WebSocketDisconnect:
                pass

    session = RealtimeSession(send, ServiceDecoder(service, tenant), config, settings.realtime_max_utterance_s,
                              settings.realtime_max_backlog_s)
    await send(events.server_event("session.created", session=config.describe()))
    deadline = time.monotonic() + settings.realtime_max_session_s
    try:
        await _receive_loop(websocket, session, send, settings, deadline)
    except WebSocketDisconnect:
        pass
    finally:
        await session.close()


async def _receive_loop(websocket: WebSocket, session: RealtimeSession, send, settings, deadline: float) -> None:
    idle = settings.realtime_idle_timeout_s
    last_event = time.monotonic()
    while True:
        # Quiet since the client's last event or its decodes' last move (a window, a transcript), whichever
        # came later: a session waiting for decodes that go on is not idle, one whose decode hangs is.
        now = time.monotonic()
        quiet_until = max(last_event, session.active_at) + idle
        try:
            message = await asyncio.wait_for(websocket.receive(), max(min(quiet_until, deadline) - now, 0.001))
        except asyncio.TimeoutError:
            now = time.monotonic()
            if now < min(max(last_event, session.active_at) + idle, deadline):
                continue  # a decode moved meanwhile
            code, why = (("session_expired", f"the session reached REALTIME_MAX_SESSION_S="
                          f"{settings.realtime_max_session_s:g} s") if now >= deadline else
                         ("idle_timeout", f"no event and no decoding for REALTIME_IDLE_TIMEOUT_S={idle:g} s"))
            await send(events.error_event(events.EventError(f"{why}; closing the session", code)))
            await websocket.close(1000, code)
            return
        last_event = time.monotonic()
        if message["type"] == "websocket.disconnect":
            return
        try:
            await session.handle(_event(message, settings.realtime_max_event_bytes))
        except events.EventError as exc:
            await send(events.error_event(exc))


def _event(message: dict, limit: int):
    """The client event in one WebSocket message; ``EventError`` says what is wrong with it."""
    text = message.get("text")
    if text is None:
        raise events.EventError("binary frames are not events: send each event as JSON in a text frame",
                                "invalid_event")
    if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
        raise events.EventError(f"the event is larger than {limit} bytes (REALTIME_MAX_EVENT_BYTES): send "
                                "audio in smaller appends", "event_too_large")
    try:
        bounded_json.check(text, "the event", max_depth=bounded_json.BODY_MAX_DEPTH)
        data = json.loads(text)
    except bounded_json.JSONValueError as exc:
        raise events.EventError(str(exc), "invalid_json") from None
    except json.JSONDecodeError as exc:
        raise events.EventError(f"the event is not JSON ({exc.msg} at character {exc.pos})", "invalid_json") from None
    except bounded_json.PARSER_ERRORS as exc:  # an integer of over 4300 digits: a ValueError of its own
        raise events.EventError(f"the event is not JSON ({type(exc).__name__})", "invalid_json") from None
    return events.parse_client_event(data)
