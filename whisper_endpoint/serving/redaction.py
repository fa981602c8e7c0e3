"""Keep tokens out of the logs: a logging filter that masks known secret values.

The server never logs settings, headers or request bodies, and its error bodies never carry exception
text; this catches the rest (a traceback whose message happens to hold a token). The secrets are
the Hugging Face token (HF_TOKEN / HF_HUB_TOKEN) and, later, API keys (#8).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

MASK = "***"
SECRET_VARIABLES = ("HF_TOKEN", "HF_HUB_TOKEN")


def environment_secrets() -> list[str]:
    return [os.environ[name] for name in SECRET_VARIABLES if os.environ.get(name)]


class RedactSecrets(logging.Filter):
    def __init__(self, secrets: Iterable[str]):
        super().__init__()
        # Very short values would mask ordinary words; real tokens are long.
        self.secrets = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)

    def mask(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        record.msg, record.args = self.mask(record.getMessage()), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.mask(record.exc_text)  # formatters print exc_text when it is set
        return True


def install(secrets: Iterable[str], loggers: Iterable[str] = ()) -> RedactSecrets:
    """Mask ``secrets`` in what the root logger's handlers and ``loggers`` (and their handlers) emit.

    On a logger, the filter masks its records before any handler sees them, captured ones included.
    Installing again replaces the previous filter.
    """
    redactor = RedactSecrets(secrets)
    names = list(loggers)
    targets = [handler for name in ["", *names] for handler in logging.getLogger(name).handlers]
    targets += [logging.getLogger(name) for name in names]
    for target in targets:
        for old in [f for f in target.filters if isinstance(f, RedactSecrets)]:
            target.removeFilter(old)
        target.addFilter(redactor)
    return redactor
