"""Completion notifications: POST the job's outcome to the URL given at submission.

SageMaker async inference's success/error notifications, as a plain webhook: the body is what
GET /jobs/{id} answers. Tried ``attempts`` times, 1 s, 2 s, 4 s ... apart; any 2xx counts as delivered.
"""

from __future__ import annotations

import logging
import time

import requests

logger = logging.getLogger(__name__)


def deliver(url: str, body: dict, *, timeout_s: float, attempts: int) -> str:
    """Blocking (run it on a thread); returns the status recorded with the job."""
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
