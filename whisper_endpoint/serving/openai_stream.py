"""OpenAI's ``stream=true``: the transcript as server-sent events while it is decoded.

Events (OpenAI's shapes): ``transcript.text.delta`` as the decode context reports new segments (after
each batch of windows on ctranslate2; once at the end on transformers, which gives no text before
it has decoded every window), ``transcript.text.segment`` per speaker segment for
``response_format=diarized_json`` once diarization has run, then ``transcript.text.done``. Segments
are reported final and in time order (each batch's remainder pass runs before the next batch), so
the deltas join to the ``done`` text, which is the non-streamed text.

The response starts at the first delta (or when the decode ends, if it ends first): an error before
it is an ordinary HTTP error; after it, an ``error`` event (the OpenAI error body) ends the stream.
A client that disconnects stops the decode at its next window (``InferenceService.run`` watches the
connection).
"""

from __future__ import annotations

import asyncio
import json
import logging

from starlette.requests import Request
from starlette.responses import StreamingResponse

from whisper_endpoint.adapters.http import as_endpoint_error, error_body, warnings_header
from whisper_endpoint.core.decode_context import DISCONNECTED, DecodeContext, Progress
from whisper_endpoint.formats import openai as shapes
from whisper_endpoint.serving.service import InferenceService

logger = logging.getLogger(__name__)

STREAMED_FORMATS = ("json", "text", "diarized_json")


class _Deltas:
    """The transcript's text so far, as Transcript.text would give it, and what each report adds."""

    def __init__(self):
        self.sent = ""

    def add(self, text: str) -> str:
        if not text.startswith(self.sent):  # never for segments reported in order; the done text is the truth
            logger.warning("streamed text diverged from the transcript; the rest comes at the end")
            return ""
        delta, self.sent = text[len(self.sent):], text
        return delta

    def from_progress(self, progress: Progress) -> str:
        return self.add("".join(segment.text for segment in progress.segments).strip())


async def stream(service: InferenceService, request: Request, payload: dict, context: DecodeContext, *,
                 task: str, response_format: str, warnings: list[str]) -> StreamingResponse:
    loop = asyncio.get_running_loop()
    reports: asyncio.Queue[Progress] = asyncio.Queue()
    # Listeners run on the decoding thread: hand each report to the loop.
    context.listen(lambda progress: loop.call_soon_threadsafe(reports.put_nowait, progress))
    run = asyncio.create_task(service.run(payload, context, receive=request.receive))
    deltas = _Deltas()
    first = await _next_delta(reports, run, deltas)
    if first is None and run.exception() is not None:
        raise run.exception()  # nothing sent yet: an ordinary HTTP error
    events = _events(first, reports, run, deltas, context, task=task, response_format=response_format,
                     warnings=warnings)
    headers = {**warnings_header(warnings), "Cache-Control": "no-cache"}
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


async def _next_delta(reports: asyncio.Queue, run: asyncio.Task, deltas: _Deltas) -> str | None:
    """The next non-empty delta, or None once the decode has ended (its result or error in ``run``)."""
    while True:
        if not reports.empty():
            progress = reports.get_nowait()
        elif run.done():
            return None
        else:
            getter = asyncio.ensure_future(reports.get())
            try:
                await asyncio.wait({getter, run}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not getter.done():
                    getter.cancel()  # no report is lost: the queue keeps it for the next get
            if getter.cancelling() or not getter.done():
                continue  # the decode ended: what it reported meanwhile is still in the queue
            progress = getter.result()
        delta = deltas.from_progress(progress)
        if delta:
            return delta


async def _events(first, reports, run, deltas, context, *, task, response_format, warnings):
    try:
        delta = first
        while delta is not None:
            yield _sse(shapes.text_delta(delta))
            delta = await _next_delta(reports, run, deltas)
        try:
            result = run.result()
        except Exception as exc:  # the stream has begun: an error event ends it
            yield _sse({"type": "error", **error_body(as_endpoint_error(exc), openai=True)})
            return
        rest = deltas.add(result["text"])
        if rest:
            yield _sse(shapes.text_delta(rest))
        if response_format == "diarized_json":
            for segment in shapes.text_segments(result):
                yield _sse({"type": "transcript.text.segment", **segment})
        yield _sse(shapes.text_done(result, task=task, warnings=warnings + result.get("warnings", [])))
    finally:
        if not run.done():  # the client went away mid-stream: stop the decode at its next window
            context.cancel(DISCONNECTED)
            run.add_done_callback(lambda task: task.cancelled() or task.exception())


def _sse(event: dict) -> bytes:
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
