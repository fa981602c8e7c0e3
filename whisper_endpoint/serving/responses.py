"""The JSON response class every route uses."""

from __future__ import annotations

import json

from starlette.responses import JSONResponse


class JSONResult(JSONResponse):
    """JSON that also takes numpy scalars and arrays (``np.float64`` timestamps, for instance)."""

    def render(self, content) -> bytes:
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_plain
        ).encode("utf-8")


def _plain(value):
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
