"""What a request costs, in encoder windows and memory (issue #17): the figures behind the window bound
and the MAX_BATCH_SIZE defaults.

    python -m scripts.measure_cost [--out results/request_cost.json]

- ``windows``: the 30 test clips joined with 1 s pauses (tiny.en, ctranslate2, one thread), decoded with
  ``chunk_length_s`` 1, 5, 15 and 30: encoder windows (the response's ``decoding.encoder_windows``),
  CPU seconds and WER, with the bound (``bounded``) and with the floor and the budget lifted, as before
  issue #17 (``unbounded``: ``cost.MIN_WINDOW_S`` = 1, no window budget).
- ``batch_memory``: peak memory of one encoder call on 1, 8 and 24 windows of the long file's features
  (embedded:base, int8, CPU, one thread), each in a fresh process: the memory a batch costs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHUNKS = (1, 5, 15, 30)
BATCHES = (1, 8, 24)


def joined_clips() -> tuple[np.ndarray, str]:
    from tests.conftest import CLIPS, clip_refs, decode_reference

    refs = clip_refs()
    pause = np.zeros(16000, dtype=np.float32)
    samples = np.concatenate([part for name in sorted(refs) for part in (decode_reference(CLIPS / name), pause)])
    return samples, " ".join(refs[name] for name in sorted(refs))


def windows_rows() -> list[dict]:
    from scripts.metrics import wer
    from whisper_endpoint.backends import cost
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:tiny.en", cpu_threads=1))
    samples, reference = joined_clips()
    handler({"inputs": {"array": samples[: 40 * 16000], "sampling_rate": 16000}})  # warm-up: VAD, first batches
    rows = []
    for bounded in (True, False):
        for chunk in CHUNKS:
            if not bounded:  # as before #17: no floor, no budget
                cost.MIN_WINDOW_S, cost.WINDOWS_PER_30S = 1, 10**6
            started = time.process_time()
            result = handler({"inputs": {"array": samples, "sampling_rate": 16000},
                              "parameters": {"chunk_length_s": chunk, "batch_size": 8}})
            rows.append({"bounded": bounded, "chunk_length_s": chunk, "audio_s": round(len(samples) / 16000, 1),
                         "encoder_windows": result["decoding"]["encoder_windows"],
                         "window_budget": cost.window_budget(len(samples) / 16000) if bounded else None,
                         "cpu_s": round(time.process_time() - started, 1),
                         "wer": round(wer([reference], [result["text"]]), 4)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def batch_memory_child(windows: int) -> dict:
    """In a fresh process: one encoder call on ``windows`` windows; peak resident memory above the loaded model."""
    from faster_whisper import WhisperModel
    from faster_whisper.feature_extractor import FeatureExtractor

    from bench.measure import peak_rss_mib, reset_peak_rss, rss_mib
    from tests.conftest import AUDIO
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.weights import embedded

    cache = ModelSettings().model_cache_dir
    model = WhisperModel(str(embedded.model_dir(cache, embedded.MODELS["base"])), device="cpu",
                         compute_type="int8", cpu_threads=1)
    audio = decode_file((AUDIO / "long" / "fillets_long.flac").read_bytes(), max_seconds=3600).samples
    features = FeatureExtractor(feature_size=model.model.n_mels)(audio[: windows * 30 * 16000])
    batch = np.stack([features[:, i * 3000: (i + 1) * 3000] for i in range(windows)]).astype(np.float32)
    del audio, features
    reset_peak_rss()
    loaded = rss_mib()
    model.encode(batch)
    return {"windows": windows, "rss_before_mib": loaded, "peak_rss_mib": peak_rss_mib(),
            "peak_above_mib": round(peak_rss_mib() - loaded, 1)}


def batch_memory_rows() -> list[dict]:
    rows = []
    for windows in BATCHES:
        done = subprocess.run([sys.executable, "-m", "scripts.measure_cost", "--child", str(windows)], cwd=ROOT,
                              env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    first, last = rows[0], rows[-1]
    per_window = (last["peak_above_mib"] - first["peak_above_mib"]) / (last["windows"] - first["windows"])
    return [*rows, {"mib_per_window": round(per_window, 1)}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "request_cost.json")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(batch_memory_child(args.child)))
        return
    result = {"load_before": os.getloadavg(), "batch_memory": batch_memory_rows(), "windows": windows_rows(),
              "load_after": os.getloadavg()}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
