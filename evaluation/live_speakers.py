"""Live speaker labels: the share of completed utterances carrying the right name, and what the label
costs ``completed``.

    python -m evaluation live_speakers [--out results/live_speakers.json] [--turns 30]

A server in this process (embedded:base, DIARIZATION_MODEL=embedded, its library in a temporary folder);
big_fish and small_fish enrolled through POST /v1/speakers from three turns each of fillets_barrel. The
first ``--turns`` turns of fillets_long (same two actors, other recordings) go through the openai SDK's
realtime client, one committed utterance per turn, into two sessions turn by turn: one with
``speaker_labels: true``, one without.

The label's delay, measured inside the labelled session: a session embeds the utterance while its words
are decoded and sends ``completed`` once it has both, so what the label adds is the time from the words
being ready to the label being ready (0 when the label came first). Both instants are read where the
server's decoder returns them (``ServiceDecoder.final`` and ``.speaker``, wrapped in this process: two
clock reads per call, the session itself unchanged), with the label's thread CPU time (``time.thread_time``
around ``LiveSpeakers.label``, which runs on one thread: the diarizer's torch threads are 1 on up to 4
cores). The A/B beside it: the time from the commit to ``completed`` in both sessions, per turn.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import requests

from evaluation.known_speakers import AUDIO, RATE, decode
from evaluation.speaker_library import BARREL, b64, turns_of
from support.serving import serve

LONG = AUDIO / "long" / "fillets_long.flac"
COMPLETED = "conversation.item.input_audio_transcription.completed"


class LabelTimes:
    """When each labelled utterance's words and label were ready (``perf_counter``, this process's clock,
    which the client reads too), and the label's thread CPU seconds, in the order the session decoded them."""

    def __init__(self):
        self.words: dict[int, list[float]] = {}  # id(decoder) -> instants, one per final decode
        self.labels: dict[int, list[float]] = {}
        self.cpu: list[float] = []

    def install(self) -> None:
        from whisper_endpoint.serving.realtime.decoder import ServiceDecoder
        from whisper_endpoint.serving.realtime.speakers import LiveSpeakers

        ServiceDecoder.final = self._stamped(ServiceDecoder.final, self.words)
        ServiceDecoder.speaker = self._stamped(ServiceDecoder.speaker, self.labels)
        label = LiveSpeakers.label

        @functools.wraps(label)
        def timed(speakers, samples):
            started = time.thread_time()
            try:
                return label(speakers, samples)
            finally:
                self.cpu.append(time.thread_time() - started)

        LiveSpeakers.label = timed

    @staticmethod
    def _stamped(method, instants: dict):
        @functools.wraps(method)
        async def stamped(decoder, *args):
            result = await method(decoder, *args)
            instants.setdefault(id(decoder), []).append(time.perf_counter())
            return result

        return stamped

    def labelled(self) -> tuple[list[float], list[float]]:
        """The labelled session's (words ready, label ready) instants."""
        (decoder,) = self.labels  # one labelled session
        return self.words[decoder], self.labels[decoder]


async def utterances(url: str, pieces: list[np.ndarray], labels: list[bool]) -> list[list[tuple]]:
    """Each piece committed in every session (one per ``labels`` value), in turn: (speaker, seconds,
    the commit's instant)."""
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
                        found[index].append(((event.model_extra or {}).get("speaker"),
                                             time.perf_counter() - started, started))
                        break
    finally:
        for connection in connections:
            await connection.close()
    return found


def ms(seconds: list[float], percentile: float) -> float:
    return round(float(np.percentile(seconds, percentile)) * 1000, 1)


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("live_speakers")
    options.add_argument("--turns", type=int, default=30)
    options.add_argument("--model", default="embedded:base")
    args = options.parse_args(argv)
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.jobs import JobSettings
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings
    from whisper_endpoint.speakers.library.settings import LibrarySettings

    handler = EndpointHandler(settings=ModelSettings(asr_model=args.model, diarization_model="embedded"))
    barrel, clips = decode(BARREL), {}
    for turn in turns_of(BARREL):
        chosen = clips.setdefault(turn["speaker"], [])
        if 3.0 <= turn["end"] - turn["start"] <= 10.0 and len(chosen) < 3:
            chosen.append(barrel[round(turn["start"] * RATE): round(turn["end"] * RATE)])
    long, turns = decode(LONG), turns_of(LONG)[: args.turns]
    pieces = [long[round(t["start"] * RATE): round(t["end"] * RATE)] for t in turns]
    times = LabelTimes()
    times.install()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(ServerSettings(), handler=handler, job_settings=JobSettings(enabled=False),
                         library_settings=LibrarySettings(db=Path(folder) / "speakers.sqlite"))
        url = serve(app)
        for name, found in clips.items():
            response = requests.post(f"{url}/v1/speakers", json={"name": name, "audio": [b64(c) for c in found]})
            response.raise_for_status()
        labelled, plain = asyncio.run(utterances(url, pieces, [True, False]))
    load_after = os.getloadavg()
    words_at, labels_at = times.labelled()
    assert len(words_at) == len(labels_at) == len(labelled), (len(words_at), len(labels_at), len(labelled))
    waits = [max(0.0, label - words) for words, label in zip(words_at, labels_at)]
    right = [said == turn["speaker"] for (said, *_), turn in zip(labelled, turns)]
    cost = [with_label - without for (_, with_label, _), (_, without, _) in zip(labelled, plain)]
    report = {
        "command": " ".join(["python -m scripts.measure_live_speakers", *sys.argv[1:]]),
        "recording": f"fillets_long, first {len(turns)} turns ({turns[-1]['end']:.0f} s)", "model": args.model,
        "enrolled_from": "fillets_barrel (3 turns per fish)",
        "cores": len(os.sched_getaffinity(0)), "load_average_1_5_15": {
            "before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        "utterances": len(turns), "named_right": round(sum(right) / len(right), 4),
        "label_wait_ms": {"p50": ms(waits, 50), "p90": ms(waits, 90), "max": ms(waits, 100),
                          "label_first": sum(wait == 0 for wait in waits),
                          "what": "completed's wait for the label once the words were ready (0: the label came first)"},
        "label_thread_cpu_ms": {"p50": ms(times.cpu, 50), "p90": ms(times.cpu, 90), "max": ms(times.cpu, 100)},
        "completed_s_p50": {"labels": round(float(np.median([s for _, s, _ in labelled])), 3),
                            "no_labels": round(float(np.median([s for _, s, _ in plain])), 3)},
        "label_cost_ab_ms": {"p50": ms(cost, 50), "p90": ms(cost, 90),
                             "what": "per turn, commit -> completed with labels minus without (another session)"},
        "per_turn": [{"truth": t["speaker"], "seconds": round(t["end"] - t["start"], 2), "speaker": said,
                      "words_s": round(words - started, 3), "label_s": round(label - started, 3),
                      "label_cpu_ms": round(cpu * 1000, 1)}
                     for (said, _, started), t, words, label, cpu in zip(labelled, turns, words_at, labels_at, times.cpu)],
    }
    save("live_speakers", args.out, report, argv)
    print(json.dumps({k: v for k, v in report.items() if k != "per_turn"}, indent=1))
    return 0
