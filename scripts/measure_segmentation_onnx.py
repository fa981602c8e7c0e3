"""The segmentation model after its first pooling on ONNX Runtime against torch, in the embedded diarizer,
on one thread, in one process.

For each file: the segmentation step's CPU time (the calling thread's: both run on it) and the whole
diarizer's (the process's) with each, alternated three times, the medians taken; whether the hard segmentation and the diarizer's turns are identical, and the largest
difference between the two's log-probabilities over the file's windows. Writes
results/diarization_segmentation_onnx.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_segmentation_onnx [FILE[:SECONDS] ...]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from scripts.measure_onnx_trunk import FILES, load_waveform, reported, write

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "diarization_segmentation_onnx.json"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_segmentation_onnx"


def _scores_difference(segmentation, waveform: torch.Tensor, rest) -> float:
    """The largest difference between torch's and ONNX Runtime's log-probabilities over the file's spans."""
    from whisper_endpoint.diarization.shared_sincnet import SPAN_WINDOWS, _FirstLayer

    window, step = 10 * 16000, round(segmentation.step * 16000)
    layer = _FirstLayer(segmentation.model, waveform, window, step)
    windows = (len(waveform) - window) // step + 1
    worst = 0.0
    for start in range(0, max(windows, 0), SPAN_WINDOWS):
        span = range(start, min(start + SPAN_WINDOWS, windows))
        segmentation.rest = None
        expected = segmentation._scores(layer, span)
        segmentation.rest = rest
        worst = max(worst, float((segmentation._scores(layer, span) - expected).abs().max()))
    return worst


def alternated(pipeline, file: dict, modes: dict[str, Callable[[], None]], rounds: int = 3) -> dict[str, list]:
    """Each mode set up and run in turn, ``rounds`` times: per mode, a list of (segmentation CPU s, the
    calling thread's; diarizer CPU s, the process's; hard segmentation; turns)."""
    seen = {mode: [] for mode in modes}
    for _ in range(rounds):
        for mode, set_up in modes.items():
            set_up()
            start = time.thread_time()
            hard = pipeline.get_segmentations(file)  # segmentation-3.0 is powerset: hard labels
            segmentation_s = time.thread_time() - start
            start = time.process_time()
            output = pipeline(file)
            seen[mode].append((segmentation_s, time.process_time() - start, hard.data, output.speaker_diarization))
    return seen


def median_cpu(seen: dict[str, list]) -> dict[str, dict[str, float]]:
    """``segmentation_cpu_s`` and ``diarizer_cpu_s``: each mode's median over its runs."""
    return {f"{stage}_cpu_s": {mode: round(float(np.median([run[i] for run in runs])), 2)
                               for mode, runs in seen.items()}
            for i, stage in enumerate(("segmentation", "diarizer"))}


def main(names: list[str]) -> None:
    from whisper_endpoint.diarization.loader import load_diarizer

    from whisper_endpoint.diarization import segmentation_onnx
    from whisper_endpoint.diarization.campplus import segmentation_checkpoint

    torch.set_num_threads(1)
    pipeline = load_diarizer("embedded", threads=1).pipeline
    segmentation = pipeline._segmentation
    rest = segmentation_onnx.load(segmentation.model, segmentation_checkpoint())  # off in the pipeline by default
    if rest is None:
        sys.exit("the segmentation model's ONNX export did not load (see the log): nothing to compare")
    rows = []
    for name in names:
        waveform = load_waveform(name)
        file = {"waveform": waveform[None], "sample_rate": 16000}
        seen = alternated(pipeline, file, {"torch": lambda: setattr(segmentation, "rest", None),
                                           "onnx": lambda: setattr(segmentation, "rest", rest)})
        row = {
            "file": name, "seconds": round(len(waveform) / 16000, 1), **median_cpu(seen),
            "hard_labels_identical": bool(np.array_equal(seen["torch"][0][2], seen["onnx"][0][2])),
            "frames": int(seen["torch"][0][2].shape[0] * seen["torch"][0][2].shape[1]),
            "turns_identical": seen["torch"][0][3] == seen["onnx"][0][3],
            "log_probabilities_max_difference": _scores_difference(segmentation, waveform, rest),
        }
        rows.append(reported(row, "segmentation", "diarizer"))
    write(OUT, COMMAND, names, rows)


if __name__ == "__main__":
    main(sys.argv[1:] or FILES)
