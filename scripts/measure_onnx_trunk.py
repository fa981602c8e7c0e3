"""CAM++'s trunk on ONNX Runtime against torch, in the embedded diarizer, on one thread, in one process.

For each file: the embeddings step's and the whole diarizer's process CPU time with each trunk (alternated
twice, the mean taken), whether the diarizer's turns are identical, the speaker count, and the largest
difference between the two trunks' frames over the file's tiles. Writes results/diarization_onnx_trunk.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_onnx_trunk [FILE[:SECONDS] ...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from bench.measure import loadavg

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "audio/dialogues/fillets_barrel.flac", "audio/dialogues/fillets_cave.flac",
    "audio/dialogues/flite_meeting.flac", "audio/ja/kokoro_ja_meeting.flac",
    "audio/long/fillets_long.flac",
]
OUT = ROOT / "results" / "diarization_onnx_trunk.json"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_onnx_trunk"


def _frames_difference(network, samples: torch.Tensor, session) -> float:
    """The largest difference between torch's and ONNX Runtime's trunk frames over the file's 20 s tiles."""
    from whisper_endpoint.diarization import campplus_onnx, pooled

    worst = 0.0
    step = 20 * pooled.SAMPLE_RATE
    for start in range(0, max(1, len(samples) - pooled.WINDOW), step):
        fbank = network.fbank(samples[start:start + step + 4 * pooled.SAMPLE_RATE])
        fbank = (fbank - fbank.mean(dim=0, keepdim=True)).T[None].contiguous()
        worst = max(worst, float((session(fbank) - campplus_onnx.torch_frames(network, fbank)).abs().max()))
    return worst


def reported(row: dict, *stages: str) -> dict:
    """``row`` with each stage's ONNX Runtime / torch CPU ratio and the load average, printed."""
    for stage in stages:
        row[f"{stage}_ratio"] = round(row[f"{stage}_cpu_s"]["onnx"] / row[f"{stage}_cpu_s"]["torch"], 2)
    row["loadavg"] = loadavg()
    print(json.dumps(row), flush=True)
    return row


def write(out: Path, command: str, names: list[str], rows: list[dict]) -> None:
    out.write_text(json.dumps({"command": command + " " + " ".join(names), "threads": 1, "files": rows},
                              indent=2) + "\n")


def load_waveform(name: str) -> torch.Tensor:
    """``FILE[:SECONDS]``: the file's first SECONDS (all of it without), 16 kHz mono float32."""
    from whisper_endpoint.audio.decode import decode_file

    path, _, seconds = name.partition(":")
    samples = decode_file((ROOT / path).read_bytes(), max_seconds=1e5).samples
    if seconds:
        samples = samples[: round(float(seconds) * 16000)]
    return torch.from_numpy(np.asarray(samples, dtype=np.float32))


def main(names: list[str]) -> None:
    from whisper_endpoint.diarization.loader import load_diarizer

    torch.set_num_threads(1)
    pipeline = load_diarizer("embedded", threads=1).pipeline
    network = pipeline.embedding_network
    session = network.onnx_trunk
    if session is None:
        sys.exit("the ONNX trunk did not load (see the log): nothing to compare")
    rows = []
    for name in names:
        waveform = load_waveform(name)
        file = {"waveform": waveform[None], "sample_rate": 16000}
        binary = pipeline.get_segmentations(file)  # segmentation-3.0 is powerset: already hard labels
        seen = {"torch": [], "onnx": []}
        for mode in ("torch", "onnx", "torch", "onnx"):
            network.onnx_trunk = session if mode == "onnx" else None
            start = time.process_time()
            pipeline.get_embeddings(file, binary, exclude_overlap=pipeline.embedding_exclude_overlap)
            embeddings_s = time.process_time() - start
            start = time.process_time()
            output = pipeline(file)
            seen[mode].append((embeddings_s, time.process_time() - start, output.speaker_diarization))
        network.onnx_trunk = session
        turns_a, turns_b = seen["torch"][0][2], seen["onnx"][0][2]
        row = {
            "file": name, "seconds": round(len(waveform) / 16000, 1),
            "diarizer_cpu_s": {m: round(float(np.mean([r[1] for r in seen[m]])), 2) for m in seen},
            "turns_identical": turns_a == turns_b,
            "speakers": {m: len(seen[m][0][2].labels()) for m in seen},
            "frames_max_difference": _frames_difference(network, waveform, session),
            "embeddings_cpu_s": {m: round(float(np.mean([r[0] for r in seen[m]])), 2) for m in seen},
        }
        rows.append(reported(row, "embeddings", "diarizer"))
    write(OUT, COMMAND, names, rows)


if __name__ == "__main__":
    main(sys.argv[1:] or FILES)
