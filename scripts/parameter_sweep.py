"""Random parameter combinations against the handler: none may be a 5xx, none may pass the window bound.

    python -m scripts.parameter_sweep ctranslate2|transformers SHORT LONG [--seed 17] [--out FILE.json]

SHORT requests on a 2.9 s clip, then LONG on 33 s of audio (three clips, three times, 1 s pauses),
tiny.en, one thread. Each combination draws every parameter from values that stress the token budget
(2000-character prompts and 1000-character hotwords sharing it, control-token text), the window bound (``chunk_length_s`` 1..30, batch sizes
up to 256) and decoding (beam size 10, word timestamps, VAD, assisted, sampling, confidence scoring). A documented 4xx is fine; any
other exception, or ``decoding.encoder_windows`` over ``cost.window_budget``, is counted as bad.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

GRID = {
    "chunk_length_s": [1, 7, 15, 29, 30], "batch_size": [1, 2, 256], "beam_size": [1, 3, 10],
    "return_timestamps": ["none", "segment", "word"],
    "initial_prompt": [None, "", "x" * 2000, ("word " * 400)[:2000], "<|0.00|> hi"],
    "vad_filter": [False, True], "recover_dropped_speech": [True, False], "assisted": [False, True],
    "task": ["transcribe"], "language": [None, "en", "auto"],
    "temperature": [0.0, 0.5, 1.0], "hotwords": [None, "caller", ("name " * 250)[:1000], "<|endoftext|>"],
    "condition_on_previous_text": [True, False], "no_speech_threshold": [0.0, 0.6, 1.0],
    "return_confidence": [False, True],
}
THREE = ["asterisk_vm-next.flac", "asterisk_transfer.flac", "asterisk_conf-invalidpin.flac"]


def main() -> int:
    from support.audio import decode_reference, read_clip
    from support.paths import CLIPS
    from whisper_endpoint.asr import cost
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.core.errors import ClientError
    from whisper_endpoint.handler import EndpointHandler

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("backend", choices=["ctranslate2", "transformers"])
    parser.add_argument("short", type=int)
    parser.add_argument("long", type=int)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:tiny.en", asr_backend=args.backend,
                                                     cpu_threads=1))
    pause = np.zeros(16000, np.float32)
    long = np.concatenate([np.concatenate([decode_reference(CLIPS / name), pause]) for name in THREE * 3])
    short = read_clip(THREE[0])
    rng = random.Random(args.seed)
    rows = []
    for i in range(args.short + args.long):
        parameters = {name: rng.choice(values) for name, values in GRID.items()}
        audio = short if i < args.short else {"array": long, "sampling_rate": 16000}
        row = {"i": i, "audio": "short" if i < args.short else "long",
               "parameters": {k: v[:12] if isinstance(v, str) else v for k, v in parameters.items()}}
        try:
            result = handler({"inputs": audio, "parameters": parameters})
            budget = cost.window_budget(result["duration"])
            row |= {"outcome": "ok" if result["decoding"]["encoder_windows"] <= budget else "over the bound",
                    "encoder_windows": result["decoding"]["encoder_windows"], "budget": budget,
                    "warnings": len(result["warnings"])}
        except ClientError as exc:
            row |= {"outcome": f"{exc.status} {exc.code}"}
        except Exception as exc:  # noqa: BLE001 - what the sweep is looking for
            row |= {"outcome": "error", "error": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    bad = [row for row in rows if row["outcome"] in ("error", "over the bound")]
    summary = {"backend": args.backend, "seed": args.seed, "requests": len(rows), "bad": len(bad), "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
