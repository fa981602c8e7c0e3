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
import time
from pathlib import Path

import numpy as np
import torch

from bench.measure import loadavg
from scripts.measure_onnx_trunk import FILES, load_waveform

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
        seen = {"float32": [], "bfloat16": []}
        for mode in ("float32", "bfloat16") * 3:
            segmentation.lstm = lstm if mode == "bfloat16" else None
            start = time.thread_time()
            hard = pipeline.get_segmentations(file)  # (windows, frames, local speakers), hard labels
            segmentation_s = time.thread_time() - start
            start = time.process_time()
            output = pipeline(file)
            seen[mode].append((segmentation_s, time.process_time() - start, hard.data, output.speaker_diarization))
        segmentation.lstm = None
        before, after = seen["float32"][0][2], seen["bfloat16"][0][2]
        cpu = {stage: {m: round(float(np.median([r[i] for r in seen[m]])), 2) for m in seen}
               for i, stage in ((0, "segmentation"), (1, "diarizer"))}
        row = {
            "file": name, "seconds": round(len(waveform) / 16000, 1),
            **{f"{stage}_cpu_s": values for stage, values in cpu.items()},
            **{f"{stage}_ratio": round(values["bfloat16"] / values["float32"], 2) for stage, values in cpu.items()},
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
