"""Command-line pieces the commands share: ``--param key=value`` request parameters."""

from __future__ import annotations

import argparse
import json


def parameter(text: str) -> tuple[str, object]:
    """``key=value`` as a request parameter; the value is read as JSON when it is JSON (numbers,
    booleans, null, lists), else kept as text."""
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--param expects key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value
