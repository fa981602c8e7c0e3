"""The JSON response class every route uses."""

from __future__ import annotations

from starlette.responses import JSONResponse

from whisper_endpoint.adapters.http import dumps


class JSONResult(JSONResponse):
    """JSON that also takes numpy scalars and arrays (``np.float64`` timestamps, for instance)."""

    def render(self, content) -> bytes:
        return dumps(content, allow_nan=False, separators=(",", ":")).encode("utf-8")
