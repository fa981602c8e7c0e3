"""Keep secrets out of the logs: every log record is masked when it is made.

The server never logs settings, headers or request bodies, and its error bodies never carry exception
text; this catches the rest: a key a client put in a URL path by mistake, a traceback whose message holds a
token. The secrets are the Hugging Face token (HF_TOKEN / HF_HUB_TOKEN), the API keys and the job
database's password (``install``: for the process's life, each call adding to the set, so ``serve()``
after ``create_app`` never drops earlier ones), and each job's callback credentials (``hold`` /
``release``: while the job is kept).

The masking is a log record factory, not a filter on some loggers: it covers every logger (the
package's, uvicorn's, libraries') and every handler, those added later included. A secret is masked in
the message, its arguments, a traceback, a stack and extra fields, as written and percent-encoded in any
form (uvicorn's access log writes a ``+`` in a path as ``%2B``; issue 60). Arguments are masked one by
one and kept, so formatters that read them (uvicorn's access log) still work; a secret split over the
message and an argument leaves the masked message alone. uvicorn's access log also gets its query
strings' values masked: a ``callback_url`` there carries webhook tokens; so do uvicorn's WebSocket lines
(``"WebSocket /v1/realtime?..." 101``) and the request line the ``websockets`` library writes at DEBUG, whose
header lines show ``***`` for credential headers (Authorization, Cookie, ...).

Secrets this process never configured but can recognise are masked by their shape (``recognise``): the
realtime client secrets (issued by the thousand, and a client may present one that this process never
issued), what follows the ``openai-insecure-api-key.`` subprotocol, and in any URL in any line the value
of a query parameter whose name says it is a credential (``?client_secret=``, ``&api_key=``, ``token``...).

Values shorter than MIN_CHARS are never masked: a 3-character key would turn ordinary words in every
line into ``***`` (API keys must have 16 characters anyway); ``install`` warns about such a secret.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode

MASK = "***"
MIN_CHARS = 8
MAX_HELD = 100_000  # owners (jobs) whose secrets are held; past it the oldest are released
SECRET_VARIABLES = ("HF_TOKEN", "HF_HUB_TOKEN")
_ACCESS_LOGGER = "uvicorn.access"  # its args: client, method, path with query, HTTP version, status
_URL_RUN = re.compile(r"[A-Za-z0-9._~:/?#@!$&*+,;=%\[\]-]+")  # characters a URL may hold unencoded
_DIRECT = 64  # up to this many values, each is looked for in the text; past it, by its first characters
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
# The value of a query parameter named like a credential, in any URL of any line. Linear in the line's
# length (a lookahead for the word, then a possessive run): every log line meets it, and a client writes
# the URL (a 16 KB name of repeated "key" took 0.9 s with two backtracking runs).
CREDENTIAL_PARAMETER = (r"(?i)[?&;](?=[\w.~-]*?(?:key|token|secret|passw|auth|credential|signature))[\w.~-]*+="
                        r"(?P<secret>[^&#;\s\"'<>]+)")
# Lines of uvicorn and of the websockets library that carry a request's path: the index of the path.
_WEBSOCKET_PATH_LINE = '%s - "WebSocket %s"'  # uvicorn's, at INFO: client, path with query, status
# websockets' at DEBUG: a server's (sans-I/O, legacy) request, a client's
_REQUEST_LINES = {"< %s %s %s": 1, "< GET %s HTTP/1.1": 0, "> GET %s HTTP/1.1": 0}
_HEADER_LINES = ("< %s: %s", "> %s: %s")  # websockets' at DEBUG: one header each
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"})

logger = logging.getLogger(__name__)
_made = logging.getLogRecordFactory()
_lock = threading.Lock()
_installed: set[str] = set()
_too_short: set[str] = set()
_held: dict[str, tuple[str, ...]] = {}  # owner (a job's id) -> its values, oldest first
_uses: Counter = Counter()  # value -> how many holders (install counts as one)
_index: dict[str, tuple[str, ...]] = {}  # a value's first MIN_CHARS characters -> the values
_values: tuple[str, ...] | None = ()  # up to _DIRECT: every value, longest first (None: use _index)
_shapes: tuple[re.Pattern, ...] = (re.compile(CREDENTIAL_PARAMETER),)  # recognised secrets (``recognise``)


def environment_secrets() -> list[str]:
    return [os.environ[name] for name in SECRET_VARIABLES if os.environ.get(name)]


def install(secrets: Iterable[str]) -> None:
    """Mask ``secrets`` (added to those installed before) in every log record from now on."""
    new = {secret for secret in secrets if secret} - _installed - _too_short
    short = {secret for secret in new if len(secret) < MIN_CHARS}
    if short:
        _too_short.update(short)
        logger.warning("%d configured secret(s) shorter than %d characters cannot be masked in the logs",
                       len(short), MIN_CHARS)
    with _lock:
        _installed.update(new - short)
        _add(new - short)
    logging.setLogRecordFactory(_record)


def recognise(pattern: str) -> None:
    """Mask, from now on, whatever matches ``pattern`` (its group ``secret`` if it has one, else all of
    it), as written or percent-encoded: secrets known by their shape, not their value."""
    global _shapes
    compiled = re.compile(pattern)
    with _lock:
        if compiled not in _shapes:
            _shapes = (*_shapes, compiled)
    logging.setLogRecordFactory(_record)


def hold(owner: str, secrets: Iterable[str]) -> None:
    """Mask ``secrets`` until ``release(owner)`` (a job's callback credentials); shorter ones are skipped."""
    values = tuple({secret for secret in secrets if secret and len(secret) >= MIN_CHARS})
    with _lock:
        _drop(_held.pop(owner, ()))
        _held[owner] = values
        _add(values)
        while len(_held) > MAX_HELD:
            _drop(_held.pop(next(iter(_held))))


def release(owner: str) -> None:
    with _lock:
        _drop(_held.pop(owner, ()))


def _add(values: Iterable[str]) -> None:
    for value in values:
        _uses[value] += 1
        if _uses[value] == 1:
            _index[value[:MIN_CHARS]] = (*_index.get(value[:MIN_CHARS], ()), value)
    _refresh()


def _drop(values: Iterable[str]) -> None:
    for value in values:
        _uses[value] -= 1
        if _uses[value] <= 0:
            del _uses[value]
            rest = tuple(other for other in _index.get(value[:MIN_CHARS], ()) if other != value)
            if rest:
                _index[value[:MIN_CHARS]] = rest
            else:
                _index.pop(value[:MIN_CHARS], None)
    _refresh()


def _refresh() -> None:
    global _values
    _values = tuple(sorted(_uses, key=len, reverse=True)) if len(_uses) <= _DIRECT else None


# --- masking text ------------------------------------------------------------------------------------


def mask(text: str) -> str:
    """``text`` with every secret, as written or percent-encoded, replaced by MASK."""
    text = _plain(text)
    if "%" in text or "+" in text:
        text = _URL_RUN.sub(_decoded_if_secret, text)
    return text


def _plain(text: str) -> str:
    """``text`` with the secrets as written (values and shapes) masked."""
    text = _literal(text)
    for shape in _shapes:
        text = shape.sub(_masked_match, text)
    return text


def _masked_match(match: re.Match) -> str:
    if "secret" not in match.re.groupindex:
        return MASK
    whole, start = match.group(), match.start()
    return whole[:match.start("secret") - start] + MASK + whole[match.end("secret") - start:]


def _literal(text: str) -> str:
    values = _values  # a value that contains another is masked whole: longest first
    if values is not None:
        found = [value for value in values if value in text]
    else:  # one pass over the text, however many jobs hold secrets
        index, last = _index, len(text) - MIN_CHARS + 1
        candidates = {value for start in range(last) for value in index.get(text[start:start + MIN_CHARS], ())}
        found = sorted((value for value in candidates if value in text), key=len, reverse=True)
    for value in found:
        text = text.replace(value, MASK)
    return text


def _decoded_if_secret(match: re.Match) -> str:
    """A run of URL characters holding an encoded secret: shown decoded, masked; any other as it was."""
    run = match.group()
    if "%" in run or "+" in run:
        for decoded in (unquote(run), unquote_plus(run)):
            masked = _plain(decoded)
            if masked != decoded:
                return masked
    return run


def masked_query(path: str) -> str:
    """``/jobs?callback_url=https://...&language=en`` -> ``/jobs?callback_url=***&language=***``."""
    route, sep, query = path.partition("?")
    if not sep:
        return path
    return f"{route}?{urlencode([(name, MASK) for name, _ in parse_qsl(query, keep_blank_values=True)], safe='*')}"


# --- masking records ---------------------------------------------------------------------------------


def _record(*args, **kwargs) -> logging.LogRecord:
    record = _made(*args, **kwargs)
    if isinstance(record.args, tuple) and record.args:
        _mask_known_lines(record)
    try:  # every record: the shapes are looked for even with no secret value installed
        _mask_record(record)
    except Exception:  # an argument whose str() or repr() fails: never raise at the caller, never leak
        record.msg, record.args = "(a log record that could not be masked)", ()
        record.exc_info = record.exc_text = record.stack_info = None
    return record


def _mask_known_lines(record: logging.LogRecord) -> None:
    """Lines whose arguments are known to hold a URL (its query's values masked) or a header."""
    args, msg = record.args, record.msg
    if record.name == _ACCESS_LOGGER and len(args) >= 3:
        record.args = (*args[:2], masked_query(str(args[2])), *args[3:])
    elif not isinstance(msg, str):
        return
    elif msg.startswith(_WEBSOCKET_PATH_LINE) and len(args) >= 2:
        record.args = (args[0], masked_query(str(args[1])), *args[2:])
    elif msg in _REQUEST_LINES and len(args) > _REQUEST_LINES[msg]:
        at = _REQUEST_LINES[msg]
        record.args = (*args[:at], masked_query(str(args[at])), *args[at + 1:])
    elif msg in _HEADER_LINES and len(args) == 2 and str(args[0]).lower() in _SECRET_HEADERS:
        record.args = (args[0], MASK)


def _mask_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a broken call (wrong arguments): its handler reports msg and args as they are
        record.msg, record.args = _masked(record.msg, always=True), _masked_args(record.args, always=True)
    else:
        if mask(message) != message:
            _mask_message(record, message)
    if record.exc_info and record.exc_info[0] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        if mask(text) != text:  # formatters print exc_text when it is set; some would format exc_info again
            record.exc_text, record.exc_info = mask(text), None
    if record.stack_info:
        record.stack_info = mask(record.stack_info)
    for name, value in list(vars(record).items()):  # extra={...} fields, which some formatters print
        if name not in _STANDARD and isinstance(value, str):
            setattr(record, name, mask(value))


def _mask_message(record: logging.LogRecord, message: str) -> None:
    msg, args = _masked(record.msg), _masked_args(record.args)
    try:
        kept = str(msg) % args if args else str(msg)
    except (TypeError, ValueError, KeyError):
        kept = None
    if kept is not None and mask(kept) == kept:
        record.msg, record.args = msg, args
    else:  # a secret split over the message and an argument, or hidden in an argument's repr
        record.msg, record.args = mask(message), ()


def _masked_args(args, *, always: bool = False):
    if isinstance(args, dict):
        return {name: _masked(value, always=always) for name, value in args.items()}
    if isinstance(args, tuple):
        return tuple(_masked(value, always=always) for value in args)
    return args


def _masked(value, *, always: bool = False):
    """A string masked; another object as its masked text if that holds a secret (``always``: its repr)."""
    if isinstance(value, str):
        return mask(value)
    text = repr(value) if always else str(value)
    return mask(text) if always or mask(text) != text else value
