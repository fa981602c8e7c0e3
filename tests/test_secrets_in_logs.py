"""Issue 60, item 2: no configured secret reaches a log line, wherever a client puts it.

The secrets are an API key, the Hub token and a job's callback credentials. Two real server processes,
``uvicorn server:app`` and ``whisper-endpoint serve`` (each sets logging up its own way), get each secret
in a URL path, a query string (as a value and as a name), a header and a body; then every line both
wrote (stdout and stderr) is read. The key is base64-like: ``+``, ``/`` and ``=`` come back
percent-encoded in the access log, a form of the key too. The callback's credentials are those of a job
kept from before the start (no model is needed: the servers' model fails to load at once); a job submitted
to a live server has its own masked from the submission on. The record-level rules (arguments,
tracebacks, split secrets, too-short values) are checked in-process.

Issue 74: the realtime WebSocket. A client secret issued by a live server (uvicorn in-process, its own
loggers and the websockets library's at DEBUG) and presented in the WebSocket's query, its subprotocol
header and its Authorization header reaches no line; 50 refused WebSockets from one address in a minute
write one WARNING line (they used to write three lines each, one an ERROR).
"""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, quote_plus

import pytest
import requests
import uvicorn
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from support.paths import ROOT
from support.audio import read_clip
from support.serving import CLIP, free_port, live_server, wait_until
from whisper_endpoint.jobs import JobSettings, open_store
from whisper_endpoint.serving import redaction
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.realtime import client_secrets, routes
from whisper_endpoint.serving.settings import ServerSettings

API_KEY = "sk-Ab3+Cd4/Ef5=Gh6+Jk7/Lm8="
HF_TOKEN = "hf_LogTestTokenQ9w8E7r6T5y4U3i2"
HOOK_TOKEN = "cbTok3n+9Zx/Qw7=Er5Ty1Ui"  # the callback's password, a path segment and a query value
_HOOK = quote(HOOK_TOKEN, safe="")
CALLBACK = f"https://hook:{_HOOK}@hooks.example/done/{_HOOK}?token={_HOOK}"


def forms(secret: str) -> set[str]:
    """How a secret can show in a log line: as is, and percent-encoded as clients and uvicorn write it."""
    encoded = {quote(secret, safe=""), quote(secret), quote_plus(secret)}
    return {secret, *encoded, *(text.replace("%2B", "%2b").replace("%2F", "%2f").replace("%3D", "%3d")
                                for text in encoded)}


def _start(command: list[str], port: int, tmp_path: Path, name: str):
    db = tmp_path / f"{name}.sqlite"
    store = open_store(db)  # a job kept from before this start: its callback's credentials are secrets
    store.add("kept", "audio/flac", {}, str(tmp_path / "gone.flac"), CALLBACK)
    store.close()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASR_MODEL": "embedded:none", "PORT": str(port),
           "HOST": "127.0.0.1", "JOBS_DB": str(db), "API_KEYS": API_KEY, "HF_TOKEN": HF_TOKEN}
    log = (tmp_path / f"{name}.log").open("w")
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT), log


def _listening(url: str) -> bool:
    try:
        return requests.get(f"{url}/health", timeout=2).status_code in (200, 503)
    except requests.RequestException:
        return False


def _send_every_secret_everywhere(url: str) -> None:
    auth = {"Authorization": f"Bearer {API_KEY}"}
    for secret in (API_KEY, HF_TOKEN, HOOK_TOKEN):
        for headers in ({}, auth):
            requests.get(f"{url}/jobs/{quote(secret, safe='')}", headers=headers, timeout=10)  # path
            requests.get(f"{url}/jobs/x?token={quote(secret, safe='')}&{quote(secret, safe='')}",  # query
                         headers={**headers, "X-Token": secret}, timeout=10)  # header
            requests.post(f"{url}/predict", data=json.dumps({"inputs": secret, "parameters": {"token": secret}}),
                          headers={**headers, "Content-Type": "application/json"}, timeout=10)  # body


def test_no_secret_reaches_any_log_line_of_either_server_command(tmp_path):
    script = shutil.which("whisper-endpoint", path=str(Path(sys.executable).parent))
    ports = {"uvicorn": free_port(), "serve": free_port()}
    commands = {"uvicorn": [sys.executable, "-m", "uvicorn", "server:app", "--host", "127.0.0.1",
                            "--port", str(ports["uvicorn"])],
                "serve": [script, "serve"]}
    started = {name: _start(command, ports[name], tmp_path, name) for name, command in commands.items()}
    try:
        for port in ports.values():
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: _listening(url), timeout=60, interval=0.05)
            _send_every_secret_everywhere(url)
    finally:
        for server, _ in started.values():
            server.send_signal(signal.SIGTERM)
        for server, log in started.values():
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
            log.close()
    for name in commands:
        text = (tmp_path / f"{name}.log").read_text()
        assert "Logging error" not in text, text  # every line was written, none lost to a formatter
        assert '"GET /jobs/*** HTTP/1.1" 401' in text and '"GET /jobs/x?token=***&***=*** HTTP/1.1" 401' in text, text
        for secret in (API_KEY, HF_TOKEN, HOOK_TOKEN):
            leaked = [form for form in forms(secret) if form in text]
            assert not leaked, f"{name} logged {leaked}:\n{text}"


def test_a_submitted_jobs_callback_credentials_are_masked_from_the_submission_on(caplog, tmp_path):
    """While the model loads (it never finishes here), a job is accepted; its callback's token, sent back
    in a path afterwards, is masked in the route's log line; deleting the job lets it go."""
    loading = threading.Event()

    def never_loads():
        loading.wait(30)
        raise RuntimeError("no model in this test")

    app = create_app(ServerSettings(), load=never_loads,
                     job_settings=JobSettings(db=tmp_path / "jobs.sqlite", callback_allow_internal=True))
    caplog.set_level(logging.INFO)
    token = "wh00k-" + HOOK_TOKEN
    with live_server(app) as server:
        submitted = requests.post(f"{server.url}/jobs", data=read_clip(CLIP), timeout=10,
                                  headers={"X-Callback-Url": f"http://127.0.0.1:9/hooks/{quote(token, safe='')}"})
        assert submitted.status_code == 202, submitted.text
        requests.get(f"{server.url}/jobs/{quote(token, safe='')}", timeout=10)
        assert requests.delete(f"{server.url}/jobs/{submitted.json()['id']}", timeout=10).status_code == 204
        requests.get(f"{server.url}/jobs/{quote(token, safe='')}", timeout=10)
        loading.set()
    lines = [record.getMessage() for record in caplog.records if record.name.endswith("error_handlers")]
    assert lines[0] == "GET /jobs/*** -> 404 not_found" and token in lines[1], lines


# --- the record rules, in-process -------------------------------------------------------------------------


@pytest.fixture
def logged():
    """Lines of the ``whisper_endpoint.test`` logger and of uvicorn's access log (with uvicorn's own
    formatter, which reads the access record's arguments), as ``serve`` and ``uvicorn`` configure them."""
    from uvicorn.logging import AccessFormatter

    out = io.StringIO()
    plain, access = logging.StreamHandler(out), logging.StreamHandler(out)
    access.setFormatter(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False))
    loggers = {"whisper_endpoint.test": plain, "uvicorn.access": access}
    for name, handler in loggers.items():
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.INFO)
    yield out
    for name, handler in loggers.items():
        logging.getLogger(name).removeHandler(handler)


def test_secrets_are_masked_in_arguments_tracebacks_and_encodings_and_short_ones_are_left(logged):
    key, short = "rk-" + "Zq9+Xw8/Vu7=" * 2, "abc1234"
    redaction.install([key, short])
    log = logging.getLogger("whisper_endpoint.test")
    log.info("a key %s and %r in the arguments", key, {"key": key})
    log.info("split over the message and its argument: " + key[:6] + "%s", key[6:])
    try:
        raise RuntimeError(f"failed with {quote(key, safe='')}")
    except RuntimeError:
        log.exception("a traceback")
    log.info("a dict argument: %(key)s", {"key": key})
    log.info("a too-short value stays: %s", short)
    logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET",
                                             f"/jobs/{quote(key)}?{quote(key, safe='')}", "1.1", 404)
    text = logged.getvalue()
    assert not [form for form in forms(key) if form in text], text
    assert '127.0.0.1:5000 - "GET /jobs/***?***=*** HTTP/1.1" 404' in text, text  # uvicorn's formatter still works
    assert "RuntimeError: failed with ***" in text and "a too-short value stays: abc1234" in text
    # A broken call (one argument too many) is made without raising; its handler's error report shows
    # the message and arguments as they are: masked.
    broken = logging.getLogRecordFactory()("x", logging.INFO, __file__, 1, "a broken call %s", (key, "extra"), None)
    assert broken.args == (redaction.MASK, "extra")


# --- the realtime WebSocket (issue 74), a live server in-process -------------------------------------------


_CLIENT_LOGGERS = ("websockets.client", "urllib3", "requests")  # this test's own clients, not the server's
_SERVER_LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(_CLIENT_LOGGERS):
            self.lines.append(self.format(record))


@contextmanager
def _server_lines(level: str):
    """A server (an API key; a stand-in handler, so sessions open) on loopback, and every line its loggers
    write at ``level`` and up, tracebacks included: uvicorn's (also the websockets library's, which
    logs through uvicorn's) passed on to one handler on the root. The loggers are put back afterwards."""
    app = create_app(ServerSettings(api_keys=API_KEY), handler=SimpleNamespace())
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level=level,
                                           lifespan="on"))
    loggers = [logging.getLogger(name) for name in _SERVER_LOGGERS]
    kept = [(log.level, log.propagate, log.disabled) for log in loggers]
    for log in loggers:
        log.setLevel(level.upper())
        log.propagate, log.disabled = True, False
    handler = _Lines()
    logging.getLogger().addHandler(handler)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, timeout=30, interval=0.01)
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}", ws=f"ws://127.0.0.1:{port}/v1/realtime",
                              lines=handler.lines, server=server)
    finally:
        server.should_exit = True
        thread.join(30)
        logging.getLogger().removeHandler(handler)
        for log, (level_, propagate, disabled) in zip(loggers, kept, strict=True):
            log.setLevel(level_)
            log.propagate, log.disabled = propagate, disabled


def _served(live) -> None:
    """Until the server has finished every request and WebSocket (their last lines are written then; idle
    keep-alive connections may stay)."""
    wait_until(lambda: not live.server.server_state.tasks, timeout=10, interval=0.01)


def _refused(url: str, **options) -> int:
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=10, **options).close()
    return refused.value.response.status_code


def test_a_client_secret_in_the_websocket_query_and_headers_reaches_no_line_at_debug():
    with _server_lines("debug") as live:
        issued = requests.post(f"{live.url}/v1/realtime/client_secrets", headers={"Authorization": f"Bearer {API_KEY}"},
                               json={"expires_after": {"anchor": "created_at", "seconds": 60}}, timeout=10)
        secret = issued.json()["value"]
        never_issued = "ek_" + secrets.token_urlsafe(24)  # the shape of one: an expired one, say
        query = f"?intent=transcription&client_secret={secret}"
        with connect(live.ws + query, subprotocols=["realtime", f"openai-insecure-api-key.{secret}"],
                     open_timeout=10) as browser:  # accepted: the secret in the query and the subprotocol
            assert json.loads(browser.recv(timeout=10))["type"] == "session.created"
        assert _refused(f"{live.ws}?intent=transcription&api_key={secret}",  # a secret is no Bearer key
                        additional_headers={"Authorization": f"Bearer {secret}"}) == 401
        assert _refused(f"{live.ws}?token={never_issued}", subprotocols=[f"openai-insecure-api-key.{never_issued}"],
                        additional_headers={"X-Api-Key": never_issued}) == 401
        requests.get(f"{live.url}/v1/realtime{query}", timeout=10)  # plain HTTP: uvicorn's access log
        _served(live)
        text = "\n".join(live.lines)
    for value in (secret, never_issued, API_KEY):
        leaked = [form for form in forms(value) | forms(value[3:]) if form in text]
        assert not leaked, f"logged {leaked}:\n{text}"
    assert "DEBUG" in text and '"WebSocket /v1/realtime?intent=***&client_secret=***" [accepted]' in text, text
    assert "openai-insecure-api-key.***" in text and "GET /v1/realtime?intent=***&client_secret=***" in text, text
    assert "ERROR" not in text, text


def test_fifty_refused_websockets_from_one_client_in_a_minute_write_one_warning_line():
    never_issued = "ek_" + secrets.token_urlsafe(24)  # a client secret this server never issued
    knocks = [{}, {"additional_headers": {"Authorization": "Bearer wrong-key-0123456789"}},
              {"subprotocols": [f"openai-insecure-api-key.{never_issued}"]}]
    with _server_lines("info") as live:
        live.lines.clear()  # the start-up's lines
        for number in range(50):
            assert _refused(f"{live.ws}?intent=transcription", **knocks[number % len(knocks)]) == 401
        _served(live)
        lines = list(live.lines)
    assert len(lines) == 1, "\n".join(lines)
    assert lines[0].startswith("WARNING whisper_endpoint.serving.realtime.routes: refused a WebSocket from 127.0.0.1")
    assert never_issued[3:] not in lines[0] and "wrong-key" not in lines[0]


def test_refused_addresses_are_held_up_to_a_bound_and_the_rest_logged_together(caplog):
    now = [0.0]
    log = routes.RefusalLog(period_s=60, capacity=2, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger=routes.__name__)
    for address in ("10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.3", "10.0.0.2"):
        log.refused(address)
    now[0] = 61.0
    for address in ("10.0.0.1", "10.0.0.3", "10.0.0.5"):
        log.refused(address)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 6 and len(log._addresses) == 2, lines
    assert [line.split(":")[0] for line in lines] == [
        "refused a WebSocket from 10.0.0.1", "refused a WebSocket from 10.0.0.2", "refused a WebSocket",
        "refused a WebSocket from 10.0.0.1", "refused a WebSocket from 10.0.0.3", "refused a WebSocket"], lines
    assert "more than 2 addresses" in lines[2] and "1 more since its last line" in lines[3], lines
    assert "2 more since the last such line" in lines[5], lines


def test_client_secrets_and_credential_query_values_are_masked_by_their_shape(logged):
    redaction.recognise(client_secrets.SHAPE)
    secret = client_secrets.PREFIX + secrets.token_urlsafe(24)
    log = logging.getLogger("whisper_endpoint.test")
    log.info("in a message %s, encoded %s, in a traceback:", secret, quote(f'"{secret}"'), exc_info=ValueError(secret))
    log.info("GET /v1/realtime?Client_Secret=%s&API-KEY=%s&x-amz-signature=%s&intent=transcription",
             "s3cr3t-value", "k3y-value", "s1gnature")
    text = logged.getvalue()
    assert secret not in text and secret[3:] not in text and "ValueError: ***" in text, text
    assert "GET /v1/realtime?Client_Secret=***&API-KEY=***&x-amz-signature=***&intent=transcription" in text, text


def test_masking_a_client_written_url_takes_time_linear_in_its_length():
    import time

    from whisper_endpoint.serving import redaction

    started = time.process_time()
    for length in (16_000, 64_000):  # a path of repeated "key" and no "=": two backtracking runs took 0.9 s at 16 KB
        assert redaction.mask("GET /v1/models;" + "key" * (length // 3)).startswith("GET /v1/models;key")
    assert redaction.mask("GET /x?api_key=abcdef&b=1") == "GET /x?api_key=***&b=1"
    assert time.process_time() - started < 0.2
