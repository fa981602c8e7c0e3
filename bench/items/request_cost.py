"""What a request costs, in encoder windows and memory: the figures behind the window bound and the
MAX_BATCH_SIZE defaults (whisper_endpoint/asr/cost.py).

- ``windows``: the test clips joined with 1 s pauses (tiny.en, ctranslate2, one thread), decoded with
  each ``chunk_length_s``: encoder windows (the response's ``decoding.encoder_windows``), CPU seconds and
  WER, with the bound (``bounded``) and with the floor and the budget lifted (``unbounded``:
  ``cost.MIN_WINDOW_S`` = 1, no window budget), in a fresh process.
- ``batch_memory``: peak memory of one encoder call on each count of windows of the long file's features
  (int8, CPU, one thread), each in a fresh process: the memory a batch costs; the last row holds the
  growth per window between the smallest and the largest batch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

from support.paths import ROOT


def joined_clips(count: int | None) -> tuple[np.ndarray, str]:
    """The first ``count`` test clips (all: None), 1 s of silence after each, and their reference."""
    from support.audio import clip_refs, decode_reference
    from support.paths import CLIPS

    refs = clip_refs()
    names = sorted(refs)[:count]
    pause = np.zeros(16000, dtype=np.float32)
    samples = np.concatenate([part for name in names for part in (decode_reference(CLIPS / name), pause)])
    return samples, " ".join(refs[name] for name in names)


def windows_rows(sizes) -> list[dict]:
    """In the child: each chunk length, bounded then unbounded (the module's bound lifted for good)."""
    from support.metrics import wer
    from whisper_endpoint.asr import cost
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:tiny.en", cpu_threads=1))
    samples, reference = joined_clips(sizes.clips)
    handler({"inputs": {"array": samples[: 40 * 16000], "sampling_rate": 16000}})  # warm-up: VAD, first batches
    rows = []
    for bounded in (True, False):
        if not bounded:  # as before the bound: no floor, no budget
            cost.MIN_WINDOW_S, cost.WINDOWS_PER_30S = 1, 10**6
        for chunk in sizes.chunks:
            started = time.process_time()
            result = handler({"inputs": {"array": samples, "sampling_rate": 16000},
                              "parameters": {"chunk_length_s": chunk, "batch_size": 8}})
            rows.append({"bounded": bounded, "chunk_length_s": chunk, "audio_s": round(len(samples) / 16000, 1),
                         "encoder_windows": result["decoding"]["encoder_windows"],
                         "window_budget": cost.window_budget(len(samples) / 16000) if bounded else None,
                         "cpu_s": round(time.process_time() - started, 1),
                         "wer": round(wer([reference], [result["text"]]), 4)})
    return rows


def batch_memory(plan, windows: int) -> dict:
    """In the child: one encoder call on ``windows`` windows; peak resident memory above the loaded model."""
    from faster_whisper import WhisperModel
    from faster_whisper.feature_extractor import FeatureExtractor

    from bench import inputs
    from support.measure import peak_rss_mib, reset_peak_rss, rss_mib
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.weights import embedded

    cache = ModelSettings().model_cache_dir
    model = WhisperModel(str(embedded.model_dir(cache, embedded.MODELS[plan.request_cost.batch_model])), device="cpu",
                         compute_type="int8", cpu_threads=1)
    audio = inputs.long_audio(plan, windows * 30.0)
    inputs.samples.cache_clear()
    features = FeatureExtractor(feature_size=model.model.n_mels)(audio)
    batch = np.stack([features[:, i * 3000: (i + 1) * 3000] for i in range(windows)]).astype(np.float32)
    del audio, features
    reset_peak_rss()
    loaded = rss_mib()
    model.encode(batch)
    return {"windows": windows, "rss_before_mib": loaded, "peak_rss_mib": peak_rss_mib(),
            "peak_above_mib": round(peak_rss_mib() - loaded, 1)}


def _child(plan, *part: str):
    completed = subprocess.run(
        [sys.executable, "-m", "bench.items.request_cost", "quick" if plan.quick else "full", *part],
        cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
        capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"request_cost child {' '.join(part)} failed: {completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run(plan) -> dict:
    sizes = plan.request_cost
    rows = [_child(plan, "batch", str(windows)) for windows in sizes.batches]
    first, last = rows[0], rows[-1]
    per_window = (last["peak_above_mib"] - first["peak_above_mib"]) / (last["windows"] - first["windows"])
    return {"windows_model": "embedded:tiny.en", "batch_model": f"embedded:{sizes.batch_model}",
            "batch_memory": [*rows, {"mib_per_window": round(per_window, 1)}], "windows": _child(plan, "windows")}


if __name__ == "__main__":
    from bench.plan import by_name

    chosen = by_name(sys.argv[1])
    if sys.argv[2] == "windows":
        print(json.dumps(windows_rows(chosen.request_cost)))
    else:
        print(json.dumps(batch_memory(chosen, int(sys.argv[3]))))
