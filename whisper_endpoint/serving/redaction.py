"""Keep secrets out of the logs: every log record is masked when it is made.

The server never logs settings, headers or request bodies, and its error bodies never carry exception
text; this catches the rest (a traceback whose message happens to hold a token or an API key). The
secrets are the Hugging Face token (HF_TOKEN / HF_HUB_TOKEN) and the API keys; ``install`` adds to
one process-wide set, so a later call (``serve()`` after ``create_app``) never drops earlier ones.

The masking is a log record factory, not a filter on some loggers: it covers every logger (the
package's, uvicorn's, libraries') and every handler, those added later included. uvicorn's access
log also gets its query strings' values masked: a ``callback_url`` there carries webhook tokens.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode

MASK = "***"
SECRET_VARIABLES = ("HF_TOKEN", "HF_HUB_TOKEN")
_ACCESS_LOGGER = "uvicorn.access"  # its args: client, method, path with query, HTTP version, status

_secrets: list[str] = []  # longest first, so a secret that contains another is masked whole
_made = logging.getLogRecordFactory()


def environment_secrets() -> list[str]:
    return [os.environ[name] for name in SECRET_VARIABLES if os.environ.get(name)]


def mask(text: str) -> str:
    for secret in _secrets:
        text = text.replace(secret, MASK)
    return text


def masked_query(path: str) -> str:
    """``/jobs?callback_url=https://...&language=en`` -> ``/jobs?callback_url=***&language=***``."""
    route, sep, query = path.partition("?")
    if not sep:
        return path
    return f"{route}?{urlencode([(name, MASK) for name, _ in parse_qsl(query, keep_blank_values=True)], safe='*')}"


def _record(*args, **kwargs) -> logging.LogRecord:
    record = _made(*args, **kwargs)
    if record.name == _ACCESS_LOGGER and isinstance(record.args, tuple) and len(record.args) >= 3:
        record.args = (*record.args[:2], masked_query(str(record.args[2])), *record.args[3:])
    if _secrets:
        record.msg, record.args = mask(record.getMessage()), ()
        if record.exc_info:  # formatters print exc_text when it is set
            record.exc_text = mask(logging.Formatter().formatException(record.exc_info))
    return record


def install(secrets: Iterable[str]) -> None:
    """Mask ``secrets`` (added to those installed before) in every log record from now on."""
    # Very short values would mask ordinary words; real tokens are long (API keys: 16+ characters).
    _secrets[:] = sorted({*_secrets, *(s for s in secrets if s and len(s) >= 8)}, key=len, reverse=True)
    logging.setLogRecordFactory(_record)
