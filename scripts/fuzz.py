"""Fuzz the handler with mutated audio files and JSON bodies for a set time; record every crash.

    OMP_NUM_THREADS=1 .venv/bin/python -m scripts.fuzz [--minutes 10] [--seed 0] [--model embedded:tiny.en]
                                                       [--out results/fuzz.json] [--crash-dir DIR]
    OMP_NUM_THREADS=1 .venv/bin/python -m scripts.fuzz --replay DIR    # rerun saved crash inputs

Seeds: the corpus' audio (support/bad_inputs.py: the test clip in several containers and rates, 5.1,
telephone audio, silence, a decompression bomb, a video-only file) and JSON bodies (base64 audio,
arrays, parameters). Each input is mutated (bit flips, byte runs, splices of two seeds, truncation,
header damage; for JSON: values replaced by random ones, keys dropped or added, nesting, text
damage) and goes the way a request goes: a JSON body through the server's own parsing
(``payloads.toolkit_payload``), then the handler with MAX_AUDIO_SECONDS = 30.

A crash is any exception other than the project's documented client errors (``ClientError``: the
4xx family in whisper_endpoint/core/errors.py and adapters/errors.py). Crashes are written to the
report with their traceback, and their inputs to --crash-dir for replay.
"""

from __future__ import annotations

import argparse
import base64
import collections
import copy
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


LIMIT_S = 30.0


def audio_seeds() -> dict[str, bytes]:
    from support import bad_inputs as corpus
    from support.audio import encode

    clip = corpus.clip_samples()
    seeds = {"flac": corpus.clip_bytes(), "mulaw8k.wav": corpus.wav(corpus.at_rate(8000), 8000, "pcm_mulaw"),
             "5.1.flac": corpus.encode_layout(clip, 16000, "flac", "flac", "5.1"),
             "bomb.flac": corpus.flac_silence(3600), "video.mkv": corpus.video_only(),
             "silence.flac": corpus.silence(3)}
    for name, container, codec in [("wav", "wav", "pcm_s16le"), ("mp3", "mp3", "libmp3lame"), ("ogg", "ogg", "libopus"),
                                   ("m4a", "ipod", "aac"), ("webm", "webm", "libopus")]:
        seeds[name] = encode(corpus.at_rate(48000) if codec == "libopus" else clip,
                             48000 if codec == "libopus" else 16000, container, codec)
    return seeds


def json_seeds(audio: dict[str, bytes]) -> list[dict]:
    from support import bad_inputs as corpus

    short = corpus.clip_samples()[:8000]
    return [
        {"inputs": base64.b64encode(audio["flac"]).decode(), "parameters": {"return_timestamps": "word"}},
        {"inputs": base64.b64encode(audio["wav"]).decode(),
         "parameters": {"language": "en", "beam_size": 2, "chunk_length_s": 10, "batch_size": 4}},
        {"inputs": {"array": [round(float(x), 4) for x in short], "sampling_rate": 16000}},
        {"inputs": {"raw": [[round(float(x), 4) for x in short[::2]]] * 2, "sampling_rate": 8000},
         "parameters": {"vad_filter": True, "return_timestamps": "none"}},
        {"inputs": "data:audio/mpeg;base64," + base64.b64encode(audio["mp3"]).decode(),
         "parameters": {"initial_prompt": "circuits", "num_speakers": 2, "task": "transcribe"}},
    ]


# --- mutations ---------------------------------------------------------------------------------------


def mutate_bytes(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        kind = rng.randrange(8)
        if not out:
            out += rng.randbytes(rng.randrange(1, 64))
        elif kind == 0:  # flip bits
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        elif kind == 1:  # overwrite a run with random or boundary bytes
            i = rng.randrange(len(out))
            run = rng.choice([rng.randbytes(rng.randrange(1, 32)), b"\xff" * 8, b"\0" * 8, b"\x7f\xff\xff\xff"])
            out[i : i + len(run)] = run
        elif kind == 2:  # damage the header, where the container's sizes and rates live
            i = rng.randrange(min(len(out), 128))
            out[i] = rng.randrange(256)
        elif kind == 3:  # truncate
            del out[rng.randrange(len(out)) :]
        elif kind == 4:  # duplicate a chunk
            i, j = sorted(rng.randrange(len(out)) for _ in range(2))
            out[j:j] = out[i : i + min(j - i, 4096)]
        elif kind == 5:  # delete a chunk
            i = rng.randrange(len(out))
            del out[i : i + rng.randrange(1, 512)]
        elif kind == 6:  # splice with another seed
            other = rng.choice(seeds)
            i = rng.randrange(len(out))
            out[i:] = other[rng.randrange(len(other)) :]
        else:  # insert random bytes
            i = rng.randrange(len(out) + 1)
            out[i:i] = rng.randbytes(rng.randrange(1, 64))
    return bytes(out)


def random_value(rng: random.Random, depth: int = 0):
    choices = [None, True, False, 0, -1, 1, 2**31, -(2**63), 2**70, 0.5, -1e308, 1e308, float("nan"), float("inf"),
               "", "en", "auto", "word", "none", "translate", "x" * rng.randrange(1, 3000), "\ud800", "\x00",
               "null", "true", "30", "1e3"]
    if depth < 3 and rng.random() < 0.2:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 3 and rng.random() < 0.1:
        return {str(random_value(rng, 3)): random_value(rng, depth + 1) for _ in range(rng.randrange(3))}
    return rng.choice(choices)


def mutate_json(rng: random.Random, body: dict, audio: list[bytes]) -> object:
    from whisper_endpoint.core.config import InferenceConfig

    out = copy.deepcopy(body)
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.randrange(7)
        params = out.get("parameters") if isinstance(out, dict) else None
        if kind == 0 and isinstance(out, dict):  # a parameter gets a random value
            out.setdefault("parameters", {})
            if isinstance(out["parameters"], dict):
                out["parameters"][rng.choice(sorted(InferenceConfig.known_fields()))] = random_value(rng)
        elif kind == 1 and isinstance(out, dict):  # inputs replaced
            out["inputs"] = rng.choice([random_value(rng), base64.b64encode(mutate_bytes(rng, rng.choice(audio), audio))
                                        .decode(), {"array": random_value(rng)}, {"array": [random_value(rng)] * 50}])
        elif kind == 2 and isinstance(out, dict) and out:  # a key dropped
            out.pop(rng.choice(sorted(out)))
        elif kind == 3 and isinstance(params, dict) and params:
            params.pop(rng.choice(sorted(params)))
        elif kind == 4 and isinstance(out, dict) and isinstance(out.get("inputs"), dict):  # array values damaged
            values = out["inputs"].get("array") or out["inputs"].get("raw")
            if isinstance(values, list) and values:
                values[rng.randrange(len(values))] = random_value(rng)
                if rng.random() < 0.3:
                    out["inputs"]["sampling_rate"] = random_value(rng)
        elif kind == 5:  # nesting
            out = rng.choice([[out], {"inputs": out}, {"parameters": out}])
        else:  # text damage after serialisation (returned as bytes)
            text = json.dumps(out).encode()
            return mutate_bytes(rng, text, [text])
    return json.dumps(out).encode()


# --- the run -----------------------------------------------------------------------------------------


def request(handler, body: bytes, is_json: bool) -> dict:
    """One input the way the server takes it: body parsing, then the handler."""
    from whisper_endpoint.adapters.payloads import toolkit_payload

    return handler(toolkit_payload(body, "application/json" if is_json else "audio/flac", {}))


def replay(handler, directory: Path) -> int:
    from whisper_endpoint.core.errors import ClientError

    crashed = 0
    for path in sorted(directory.glob("crash-*")):
        try:
            outcome = f"200 {request(handler, path.read_bytes(), path.suffix == '.json')['text'][:40]!r}"
        except ClientError as exc:
            outcome = f"{exc.status} {exc.code}"
        except Exception as exc:
            crashed, outcome = crashed + 1, f"CRASH {type(exc).__name__}: {exc}"
        print(f"{path.name}: {outcome}")
    return 1 if crashed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="embedded:tiny.en")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "fuzz.json")
    parser.add_argument("--crash-dir", type=Path, default=Path("/tmp/whisper-endpoint-fuzz-crashes"))
    parser.add_argument("--replay", type=Path, help="run the saved inputs of a crash directory once and stop")
    args = parser.parse_args()

    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.core.errors import ClientError
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model=args.model, max_audio_seconds=LIMIT_S))
    if args.replay:
        return replay(handler, args.replay)
    audio = audio_seeds()
    audio_list = list(audio.values())
    bodies = json_seeds(audio)
    rng = random.Random(args.seed)
    outcomes: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    crashes, slowest = [], []
    started = time.monotonic()
    deadline = started + args.minutes * 60
    tried = 0
    while time.monotonic() < deadline:
        if rng.random() < 0.5:
            name = rng.choice(sorted(audio))
            kind, body, media = f"audio:{name}", mutate_bytes(rng, audio[name], audio_list), "audio/" + name
        else:
            kind, body, media = "json", mutate_json(rng, rng.choice(bodies), audio_list), "application/json"
        kinds[kind.rsplit(".", 1)[0]] += 1
        tried += 1
        t0 = time.monotonic()
        try:
            result = request(handler, body, media == "application/json")
            outcomes["200"] += 1
            assert isinstance(result["text"], str)
        except ClientError as exc:
            outcomes[f"{exc.status} {exc.code}"] += 1
        except Exception as exc:  # a crash: not one of the documented errors
            outcomes["crash"] += 1
            args.crash_dir.mkdir(parents=True, exist_ok=True)
            path = args.crash_dir / f"crash-{len(crashes):03d}.{'json' if kind == 'json' else 'bin'}"
            path.write_bytes(body)
            crashes.append({"kind": kind, "exception": f"{type(exc).__name__}: {str(exc)[:300]}", "input": str(path),
                            "traceback": traceback.format_exc()[-3000:]})
            print(f"CRASH {kind}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
        elapsed = time.monotonic() - t0
        slowest = sorted([*slowest, (round(elapsed, 2), kind)], reverse=True)[:5]
        if tried % 100 == 0:
            print(f"{tried} inputs, {time.monotonic() - started:.0f} s, {len(crashes)} crashes", flush=True)

    report = {
        "minutes": round((time.monotonic() - started) / 60, 2), "inputs_tried": tried, "crashes": len(crashes),
        "seed": args.seed, "model": args.model, "max_audio_seconds": LIMIT_S,
        "inputs_by_kind": dict(sorted(kinds.items())), "outcomes": dict(outcomes.most_common()),
        "slowest_s": [{"seconds": s, "kind": k} for s, k in slowest], "crash_details": crashes,
        "machine": f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "crash_details"}, indent=2))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
