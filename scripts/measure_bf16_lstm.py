"""The segmentation LSTM in bfloat16 against float32, in the embedded diarizer, on one thread, in one process.

For each file: the segmentation step's CPU time (the calling thread's) and the whole diarizer's (the
process's) with each, alternated three times, the medians taken; how many window frames got another hard
label, and how far apart the two diarizations are (DER of bfloat16's turns against float32's, no collar).
Needs a CPU with bfloat16 arithmetic of its own (bf16_lstm.native_bf16). Writes
results/diarization_bf16_lstm_cost.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_bf16_lstm [FILE[:SECONDS] ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from bench.measure import loadavg
from scripts.measure_onnx_trunk import FILES, load_waveform
from scripts.measure_segmentation_onnx import alternated, median_cpu

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "diarization_bf16_lstm_cost.json"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_bf16_lstm"


def main(names: list[str]) -> None:
    from pyannote.metrics.diarization import DiarizationErrorRate

    from whisper_endpoint.diarization import bf16_lstm
    from whisper_endpoint.diarization.loader import load_diarizer

    if not bf16_lstm.native_bf16():
        sys.exit("this CPU has no bfloat16 arithmetic of its own: the pipeline would keep the float32 LSTM")
    torch.set_num_threads(1)
    pipeline = load_diarizer("embedded", threads=1).pipeline
    segmentation = pipeline._segmentation
    lstm = bf16_lstm.BFloat16LSTM(segmentation.model.lstm)
    rows = []
    for name in names:
        waveform = load_waveform(name)
        file = {"waveform": waveform[None], "sample_rate": 16000}
        seen = alternated(pipeline, file, {"float32": lambda: setattr(segmentation, "lstm", None),
                                           "bfloat16": lambda: setattr(segmentation, "lstm", lstm)})
        segmentation.lstm = None
        before, after = seen["float32"][0][2], seen["bfloat16"][0][2]  # (windows, frames, local speakers)
        cpu = median_cpu(seen)
        row = {
            "file": name, "seconds": round(len(waveform) / 16000, 1), **cpu,
            **{f"{key.removesuffix('_cpu_s')}_ratio": round(values["bfloat16"] / values["float32"], 2)
               for key, values in cpu.items()},
            "window_frames": int(before.shape[0] * before.shape[1]),
            "window_frames_relabelled": int((before != after).any(axis=-1).sum()),
            "der_against_float32_percent": round(100 * DiarizationErrorRate()(
                seen["float32"][0][3], seen["bfloat16"][0][3]), 2),
            "loadavg": loadavg(),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    OUT.write_text(json.dumps({"command": f"{COMMAND} {' '.join(names)}", "threads": 1, "files": rows}, indent=2)
                   + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or [*FILES[:-1], "audio/long/fillets_long.flac:300"])
