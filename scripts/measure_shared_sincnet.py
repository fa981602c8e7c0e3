"""The shared SincNet first layer against pyannote's own Inference, on one thread, in one process.

For each file: the segmentation step's and the whole embedded diarizer's process CPU time with each
segmenter (alternated twice, the mean taken), whether the diarizer's turns are identical, and how many
hard segmentation frames differ. Writes results/diarization_shared_sincnet.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_shared_sincnet [FILE ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "audio/dialogues/fillets_barrel.flac", "audio/dialogues/fillets_cave.flac",
    "audio/dialogues/flite_meeting.flac", "audio/ja/kokoro_ja_meeting.flac", "audio/long/fillets_long.flac",
]
OUT = ROOT / "results" / "diarization_shared_sincnet.json"


def main(files: list[str]) -> None:
    from pyannote.audio.core.inference import Inference

    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.diarization.loader import load_diarizer

    torch.set_num_threads(1)
    pipeline = load_diarizer("embedded", threads=1).pipeline
    shared = pipeline._segmentation
    plain = Inference(shared.model, duration=shared.duration, step=shared.step, skip_aggregation=True,
                      batch_size=shared.batch_size)
    rows = []
    for name in files:
        samples = decode_file((ROOT / name).read_bytes(), max_seconds=1e5).samples
        file = {"waveform": torch.from_numpy(np.asarray(samples, dtype=np.float32))[None], "sample_rate": 16000}
        seen = {"pyannote": [], "shared": []}
        for mode in ("pyannote", "shared", "pyannote", "shared"):
            pipeline._segmentation = plain if mode == "pyannote" else shared
            start = time.process_time()
            segmentation = pipeline.get_segmentations(file)
            segmentation_s = time.process_time() - start
            start = time.process_time()
            turns = pipeline(file).speaker_diarization
            seen[mode].append((segmentation_s, time.process_time() - start, segmentation.data, turns))
        (_, _, seg_a, turns_a), (_, _, seg_b, turns_b) = seen["pyannote"][0], seen["shared"][0]
        row = {
            "file": name, "seconds": round(len(samples) / 16000, 1),
            "segmentation_cpu_s": {m: round(float(np.mean([r[0] for r in seen[m]])), 2) for m in seen},
            "diarizer_cpu_s": {m: round(float(np.mean([r[1] for r in seen[m]])), 2) for m in seen},
            "turns_identical": turns_a == turns_b,
            "segmentation_frames_differing": int((np.nan_to_num(seg_a) != np.nan_to_num(seg_b)).sum()),
        }
        row["segmentation_ratio"] = round(row["segmentation_cpu_s"]["shared"] / row["segmentation_cpu_s"]["pyannote"], 2)
        row["diarizer_ratio"] = round(row["diarizer_cpu_s"]["shared"] / row["diarizer_cpu_s"]["pyannote"], 2)
        print(json.dumps(row), flush=True)
        rows.append(row)
    OUT.write_text(json.dumps({"threads": 1, "files": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or FILES)
