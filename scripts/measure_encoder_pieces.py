"""The Whisper encoder on CPU in pieces of a few windows (backends/encoding.py) against one call on the whole batch.

Two measurements, embedded:base (int8), the long Dutch file:
- the encoder alone on 8 windows (the CPU batch), whole and in pieces of 1, 2 and 4, alternated three times in
  one process, on one thread (CPU s) and at the defaults (CTranslate2's own thread count, wall s), with the
  outputs compared bit for bit;
- a plain request on the first 5 min through the handler at the defaults, each way in a fresh process: its
  peak RSS (VmHWM reset before the request) and CPU time.
Writes results/encoder_pieces.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_encoder_pieces
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "encoder_pieces.json"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_encoder_pieces"
WINDOW = 30 * 16000
PIECES = (1, 2, 4, 8)  # 8: the whole batch in one call


def _encoder(threads: int) -> dict:
    import ctranslate2
    from faster_whisper import WhisperModel

    from bench import backends, inputs
    from bench.plan import by_name

    plan = by_name("full")
    model = WhisperModel(str(backends.ctranslate2_dir(plan.model)), device="cpu", compute_type="int8",
                         cpu_threads=threads)
    audio = inputs.long_audio(plan, 8 * 30)
    features = np.stack([model.feature_extractor(audio[i * WINDOW:(i + 1) * WINDOW])[:, :3000]
                         for i in range(8)]).astype(np.float32)

    def encode(piece: int) -> np.ndarray:
        return np.concatenate([np.asarray(model.model.encode(ctranslate2.StorageView.from_array(
            np.ascontiguousarray(features[i:i + piece])))) for i in range(0, 8, piece)])

    whole = encode(8)
    identical = {piece: bool(np.array_equal(encode(piece), whole)) for piece in PIECES}
    clock = time.process_time if threads == 1 else time.perf_counter
    seconds = {piece: [] for piece in PIECES}
    for _ in range(3):
        for piece in PIECES:
            start = clock()
            encode(piece)
            seconds[piece].append(round(clock() - start, 2))
    return {"threads": threads or "defaults", "clock": "process CPU s" if threads == 1 else "wall s",
            "seconds": {str(piece): values for piece, values in seconds.items()},
            "identical_to_whole": {str(piece): same for piece, same in identical.items()}}


def _request_child(pieces: bool) -> dict:
    from bench import backends, inputs
    from bench.measure import peak_rss_mib, reset_peak_rss
    from bench.plan import by_name
    from whisper_endpoint.backends import encoding

    if not pieces:
        encoding.CPU_PIECE = 1 << 30  # every batch in one call, as before
    plan = by_name("full")
    audio = inputs.long_audio(plan, 300)
    handler = backends.handler(plan.model, cpu_threads=0)
    backends.ask(handler, inputs.clip(plan.short_clip), language=plan.language)  # warm-up
    reset_peak_rss()
    start = time.process_time()
    response = backends.ask(handler, audio, language=plan.language)
    cpu = time.process_time() - start
    return {"pieces": pieces, "peak_rss_mib": peak_rss_mib(), "cpu_s": round(cpu, 2), "text": response["text"]}


def main() -> None:
    from bench.measure import loadavg

    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(_request_child(sys.argv[2] == "pieces")))
        return
    env = {name: value for name, value in os.environ.items()
           if name not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CPU_THREADS")}
    requests = []
    for mode in ("whole", "pieces"):
        done = subprocess.run([sys.executable, "-m", "scripts.measure_encoder_pieces", "--child", mode], cwd=ROOT,
                              env=env, capture_output=True, text=True, check=True)
        requests.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps({key: value for key, value in requests[-1].items() if key != "text"}), flush=True)
    encoder = [_encoder(1), _encoder(0)]
    print(json.dumps(encoder), flush=True)
    OUT.write_text(json.dumps({
        "command": COMMAND, "cores": len(os.sched_getaffinity(0)), "loadavg": loadavg(),
        "encoder_8_windows": encoder,
        "plain_request_5_min_defaults": [{key: value for key, value in row.items() if key != "text"} for row in requests],
        "same_text": requests[0]["text"] == requests[1]["text"],
    }, indent=2) + "\n")


if __name__ == "__main__":
    main()
