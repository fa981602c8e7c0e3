"""Where the embedded diarizer's CPU time goes, per stage and per layer, on one thread.

Each stage and each model layer is timed with the calling thread's CPU time (forward hooks on the
segmentation model's and CAM++'s layers, wrappers around the pipeline's steps), on a second run of the
same input (the first warms up). Default input: the first 5 min of the 13.4 min file. Writes
results/diarization_profile_stages.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.profile_diarizer [SECONDS] [FILE]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "diarization_profile_stages.json"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.profile_diarizer"


class Clock:
    def __init__(self):
        self.seconds: dict[str, float] = {}

    def add(self, key: str, seconds: float) -> None:
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds

    def module(self, module, key: str) -> None:
        def before(m, _):
            m._profile_started = time.thread_time()

        def after(m, _, __):
            self.add(key, time.thread_time() - m._profile_started)

        module.register_forward_pre_hook(before)
        module.register_forward_hook(after)

    def method(self, owner, name: str, key: str) -> None:
        function = getattr(owner, name)

        def timed(*args, **kwargs):
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.add(key, time.thread_time() - started)

        setattr(owner, name, timed)


def instrument(pipeline, clock: Clock) -> None:
    from whisper_endpoint.diarization import shared_sincnet

    model = pipeline._segmentation.model
    clock.module(model.lstm, "segmentation/lstm")
    for layer in model.linear:
        clock.module(layer, "segmentation/linear+classifier")
    clock.module(model.classifier, "segmentation/linear+classifier")
    sincnet = model.sincnet
    for index in range(len(sincnet.conv1d)):
        if index:
            clock.module(sincnet.conv1d[index], "segmentation/sincnet_rest")
        clock.module(sincnet.norm1d[index], "segmentation/sincnet_rest")
        clock.module(sincnet.pool1d[index], "segmentation/sincnet_rest")
    clock.method(shared_sincnet._FirstLayer, "over", "segmentation/sincnet_first_layer")
    clock.method(shared_sincnet._FirstLayer, "windows", "segmentation/sincnet_first_layer")
    network = pipeline.embedding_network
    clock.method(network, "fbank", "embeddings/fbank")
    if network.onnx_trunk is not None:
        clock.method(type(network.onnx_trunk), "__call__", "embeddings/trunk_onnx")
    clock.module(network.campplus.head, "embeddings/trunk_torch")
    clock.module(network.campplus.xvector[:-2], "embeddings/trunk_torch")
    for name, key in (("get_segmentations", "segmentation"), ("get_embeddings", "embeddings"),
                      ("_fill", "speech_fill"), ("_check_turns", "turn_check"),
                      ("_cut_voice_changes", "voice_changes"), ("_check_count", "count_check")):
        clock.method(pipeline, name, key)


def main(seconds: float, name: str) -> None:
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.diarization.loader import load_diarizer

    torch.set_num_threads(1)
    samples = decode_file((ROOT / name).read_bytes(), max_seconds=1e5).samples[: round(seconds * 16000)]
    pipeline = load_diarizer("embedded", threads=1).pipeline
    clock = Clock()
    instrument(pipeline, clock)
    file = {"waveform": torch.from_numpy(np.asarray(samples, dtype=np.float32))[None], "sample_rate": 16000}
    pipeline(file)  # warm-up
    clock.seconds.clear()
    started = time.thread_time()
    pipeline(file)
    total = time.thread_time() - started
    stages = {key: round(value, 3) for key, value in sorted(clock.seconds.items())}
    known = sum(value for key, value in clock.seconds.items() if "/" not in key)
    result = {"command": f"{COMMAND} {seconds:g} {name}", "file": name, "seconds": round(len(samples) / 16000, 1),
              "threads": 1, "loadavg": [round(x, 2) for x in os.getloadavg()], "diarizer_cpu_s": round(total, 3),
              "cpu_s": stages | {"clustering_and_rest": round(total - known, 3)}}
    print(json.dumps(result, indent=1))
    OUT.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0, sys.argv[2] if len(sys.argv) > 2 else "audio/long/fillets_long.flac")
