"""Live speaker labels: the share of completed utterances carrying the right name, and what the label
costs ``completed``.

    .venv/bin/python -m scripts.measure_live_speakers [--out results/live_speakers.json] [--turns 30]

A server in this process (embedded:base, DIARIZATION_MODEL=embedded, its library in a temporary folder);
big_fish and small_fish enrolled through POST /v1/speakers from three turns each of fillets_barrel. The
first ``--turns`` turns of fillets_long (same two actors, other recordings) go through the openai SDK's
realtime client, one committed utterance per turn, into two sessions turn by turn: one with
``speaker_labels: true``, one without. Delay: the time from the commit to ``completed``; the label's cost
is the per-turn difference of the two (median and 90th percentile), measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import requests

from scripts.evaluate_known_speakers import AUDIO, RATE, decode
from scripts.evaluate_speaker_library import BARREL, b64, turns_of
from scripts.loopback import serve

ROOT = Path(__file__).resolve().parents[1]
LONG = AUDIO / "long" / "fillets_long.flac"
COMPLETED = "conversation.item.input_audio_transcription.completed"


async def utterances(url: str, pieces: list[np.ndarray], labels: list[bool]) -> list[list[tuple]]:
    """Each piece committed in every session (one per ``labels`` value), in turn: (speaker, seconds)."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url + "/v1", api_key="not-checked")
    found: list[list[tuple]] = [[] for _ in labels]
    connections = [await client.realtime.connect(extra_query={"intent": "transcription"}).enter() for _ in labels]
    try:
        for connection, labelled in zip(connections, labels):
            await connection.session.update(session={"type": "transcription", "audio": {"input": {
                "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None,
                "transcription": {"language": "nl", "speaker_labels": labelled}}}})
        for piece in pieces:
            pcm = base64.b64encode((np.clip(piece, -1, 1) * 32767).astype("<i2").tobytes()).decode()
            for index, connection in enumerate(connections):
                await connection.input_audio_buffer.append(audio=pcm)
                started = time.perf_counter()
                await connection.input_audio_buffer.commit()
                async for event in connection:
                    if event.type == "error":
                        raise SystemExit(f"error event: {event}")
                    if event.type == COMPLETED:
                        found[index].append(((event.model_extra or {}).get("speaker"), time.perf_counter() - started))
                        break
    finally:
        for connection in connections:
            await connection.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "live_speakers.json")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--model", default="embedded:base")
    args = parser.parse_args()
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.jobs import JobSettings
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings
    from whisper_endpoint.voice_library.settings import LibrarySettings

    handler = EndpointHandler(settings=ModelSettings(asr_model=args.model, diarization_model="embedded"))
    barrel, clips = decode(BARREL), {}
    for turn in turns_of(BARREL):
        chosen = clips.setdefault(turn["speaker"], [])
        if 3.0 <= turn["end"] - turn["start"] <= 10.0 and len(chosen) < 3:
            chosen.append(barrel[round(turn["start"] * RATE): round(turn["end"] * RATE)])
    long, turns = decode(LONG), turns_of(LONG)[: args.turns]
    pieces = [long[round(t["start"] * RATE): round(t["end"] * RATE)] for t in turns]
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(ServerSettings(), handler=handler, job_settings=JobSettings(enabled=False),
                         library_settings=LibrarySettings(db=Path(folder) / "speakers.sqlite"))
        url = serve(app)
        for name, found in clips.items():
            response = requests.post(f"{url}/v1/speakers", json={"name": name, "audio": [b64(c) for c in found]})
            response.raise_for_status()
        labelled, plain = asyncio.run(utterances(url, pieces, [True, False]))
    right = [said == turn["speaker"] for (said, _), turn in zip(labelled, turns)]
    cost = [with_label - without for (_, with_label), (_, without) in zip(labelled, plain)]
    report = {
        "recording": f"fillets_long, first {len(turns)} turns ({turns[-1]['end']:.0f} s)", "model": args.model,
        "enrolled_from": "fillets_barrel (3 turns per fish)",
        "utterances": len(turns), "named_right": round(sum(right) / len(right), 4),
        "completed_s_p50": {"labels": round(float(np.median([s for _, s in labelled])), 3),
                            "no_labels": round(float(np.median([s for _, s in plain])), 3)},
        "label_cost_ms": {"p50": round(float(np.median(cost)) * 1000), "p90": round(float(np.percentile(cost, 90)) * 1000)},
        "per_turn": [{"truth": t["speaker"], "seconds": round(t["end"] - t["start"], 2), "speaker": said}
                     for (said, _), t in zip(labelled, turns)],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "per_turn"}, indent=1))


if __name__ == "__main__":
    main()
