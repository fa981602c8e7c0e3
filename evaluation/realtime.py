"""Live transcription at real-time pace: latency and accuracy of GET /v1/realtime sessions.

    python -m evaluation realtime [--model embedded:base] [--sessions 1] [--clips 30] [--pause 1.5]
                                     [--japanese] [--out results/realtime.json]

Starts the server in this process on 127.0.0.1 (the model from --model, int8 on CPU), then each of
--sessions sessions streams the 30 clips of audio/clips back to back, --pause s of silence
between them, at 24 kHz in 100 ms appends at real-time pace (server VAD, OpenAI's defaults). Measured:
from each clip's last sample sent to its `completed` event (p50/p95), from its first sample sent to
its first delta, and the WER of the session's transcripts against file transcription of the same
clips by the same model (and against the references). --japanese streams ja/kokoro_ja_meeting.flac
instead (language ja; CER against file transcription and the reference): an untuned check.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import statistics
import time

import numpy as np
import websockets

from support.audio import pcm16
from support.load import percentile
from support.metrics import cer, wer
from support.paths import AUDIO
from support.serving import serve

RATE = 24000
FRAME = 2400  # 100 ms


def start_server(model: str) -> tuple[str, object]:
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings

    handler = EndpointHandler(settings=ModelSettings(asr_model=model))
    url = serve(create_app(ServerSettings(realtime_max_sessions=64), handler=handler))
    return url.replace("http://", "ws://") + "/v1/realtime?intent=transcription", handler


async def session(url: str, pieces: list[np.ndarray], pause: float, language: str) -> dict:
    """Stream the pieces with pauses at real-time pace; return per-piece spans and the events."""
    gap = np.zeros(int(pause * RATE), dtype=np.int16)
    stream, spans, position = [], [], 0
    for piece in pieces:
        spans.append((position, position + len(piece)))
        stream += [piece, gap]
        position += len(piece) + len(gap)
    audio = np.concatenate(stream)
    received: list[tuple[float, dict]] = []
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "session.update", "session": {"type": "transcription", "audio": {
            "input": {"transcription": {"language": language}}}}}))

        async def read():
            async for message in ws:
                received.append((time.monotonic(), json.loads(message)))

        reader = asyncio.create_task(read())
        started = time.monotonic()
        for index, start in enumerate(range(0, len(audio), FRAME)):
            chunk = audio[start : start + FRAME].tobytes()
            await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(chunk).decode()}))
            await asyncio.sleep(max(0.0, started + (index + 1) * FRAME / RATE - time.monotonic()))
        commits = lambda: sum(e["type"] == "input_audio_buffer.committed" for _, e in received)  # noqa: E731
        done = lambda: sum(e["type"].endswith("transcription.completed") for _, e in received)  # noqa: E731
        deadline = time.monotonic() + 120
        while (done() < commits() or commits() == 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        reader.cancel()
    return {"started": started, "spans": spans, "events": received}


def per_piece(result: dict) -> list[dict]:
    """Each piece's transcript, latency from its end to its last item's completed event, and from its
    start to its first delta. An item belongs to the piece during which its audio starts."""
    started, spans, received = result["started"], result["spans"], result["events"]
    items: dict[str, dict] = {}
    for at, event in received:
        item = items.setdefault(event.get("item_id"), {"deltas": []}) if event.get("item_id") else None
        if event["type"] == "input_audio_buffer.committed":
            item["start"] = event["audio_start_ms"] * RATE // 1000
        elif event["type"].endswith("transcription.delta"):
            item["deltas"].append(at)
        elif event["type"].endswith("transcription.completed"):
            item["completed"], item["text"] = at, event["transcript"]
    pieces = []
    for index, (start, end) in enumerate(spans):
        next_start = spans[index + 1][0] if index + 1 < len(spans) else float("inf")
        mine = [item for item in items.values() if "completed" in item and start - RATE // 2 <= item["start"] < next_start - RATE // 2]
        deltas = [at for item in mine for at in item["deltas"]]
        pieces.append({
            "text": " ".join(item["text"] for item in mine),
            "completed_s": max(item["completed"] for item in mine) - (started + end / RATE) if mine else None,
            "first_delta_s": min(deltas) - (started + start / RATE) if deltas else None,
        })
    return pieces


def summary(values: list[float | None]) -> dict:
    present = [value for value in values if value is not None]
    if not present:
        return {"count": 0}
    return {"count": len(present), "p50": round(statistics.median(present), 3), "p95": round(percentile(present, 0.95), 3)}


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("realtime")
    options.add_argument("--model", default="embedded:base")
    options.add_argument("--sessions", type=int, default=1)
    options.add_argument("--clips", type=int, default=30)
    options.add_argument("--pause", type=float, default=1.5)
    options.add_argument("--japanese", action="store_true")
    args = options.parse_args(argv)
    if args.japanese:
        meeting = AUDIO / "ja" / "kokoro_ja_meeting.flac"
        names, language = [meeting], "ja"
        references = ["".join(turn["text"] for turn in json.loads(meeting.with_suffix(".json").read_text())["turns"])]
    else:
        refs = json.loads((AUDIO / "clips" / "refs.json").read_text())[: args.clips]
        names, language = [AUDIO / "clips" / r["file"] for r in refs], "en"
        references = [r["text"] for r in refs]
    url, handler = start_server(args.model)
    decode_started = time.perf_counter()
    files = [handler({"inputs": path.read_bytes(), "parameters": {"language": language}})["text"] for path in names]
    decode_s = (time.perf_counter() - decode_started) / len(names)  # one file decode, here and now
    pieces = [pcm16(path, RATE) for path in names]

    async def run_all():
        return await asyncio.gather(*[session(url, pieces, args.pause, language) for _ in range(args.sessions)])

    results = asyncio.run(run_all())
    measured = [piece for result in results for piece in per_piece(result)]
    texts = [piece["text"] for piece in per_piece(results[0])]
    score = cer if args.japanese else wer
    report = {
        "model": args.model, "sessions": args.sessions, "pieces": len(names), "pause_s": args.pause,
        "silence_duration_ms": 500, "metric": score.__name__,
        "completed_latency_s": summary([p["completed_s"] for p in measured]),
        "first_delta_latency_s": summary([p["first_delta_s"] for p in measured]),
        "session_vs_file": round(score(files, texts), 4),
        "session_vs_reference": round(score(references, texts), 4),
        "file_vs_reference": round(score(references, files), 4),
        "missing": sum(not text for text in texts),
        "file_decode_s_mean": round(decode_s, 3),
        "load_average_1min": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(report, indent=2))
    save("realtime", args.out, {**report, "transcripts": texts, "file_transcripts": files}, argv)
    return 0
