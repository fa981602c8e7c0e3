"""How close the embedded diarizer's models run to this core's float32 arithmetic peak, and the diarizer's
floor on one thread: its models' floating-point operations at that peak.

On one thread: a large float32 matrix product (the core's practical peak) and its bfloat16 counterpart;
segmentation-3.0's LSTM on a span of 16 windows and CAM++'s trunk (ONNX Runtime, as the pipeline runs it)
on a 24 s tile, each as operations per second. Operations: torch's FlopCounterMode for the convolutions
and linear layers, the LSTM's by its shapes (it counts no LSTM). The floor for SECONDS of audio: every
segmentation window (step 1 s) through the model after the shared first layer, the first layer once over
the input, and CAM++'s trunk once over the input with no tile context, all at the matrix product's rate.
Medians of five runs of each, interleaved (bench.measure). Writes results/diarization_arithmetic_floor.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_arithmetic_floor [SECONDS]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from bench.measure import interleaved, loadavg

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "diarization_arithmetic_floor.json"
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_arithmetic_floor"
RATE = 16000
WINDOW_S, STEP_S = 10.0, 1.0
TILE_S = 24.0
SPAN = 16  # windows per LSTM call (shared_sincnet.SPAN_WINDOWS)
RUNS = 5


def lstm_flops(lstm: torch.nn.LSTM, batch: int, frames: int) -> int:
    """Multiply-adds of every gate product, both directions, every layer, times two."""
    gates = 4 * lstm.hidden_size
    directions = 2 if lstm.bidirectional else 1
    total = 0
    for layer in range(lstm.num_layers):
        inputs = lstm.input_size if layer == 0 else lstm.hidden_size * directions
        total += directions * gates * (inputs + lstm.hidden_size)
    return 2 * total * batch * frames


def counted_flops(call) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter, torch.inference_mode():
        call()
    return counter.get_total_flops()


def main(seconds: float) -> None:
    from whisper_endpoint.diarization.loader import load_diarizer
    from whisper_endpoint.diarization.shared_sincnet import _after_sincnet, _sincnet_rest

    torch.set_num_threads(1)
    pipeline = load_diarizer("embedded", threads=1).pipeline
    model = pipeline._segmentation.model
    network = pipeline.embedding_network
    encoder = model.sincnet.conv1d[0]
    with torch.inference_mode():
        filters, _, taps = encoder.get_filters().shape
    window = round(WINDOW_S * RATE)
    groups = ((window - taps) // encoder.stride + 1) // model.sincnet.pool1d[0].kernel_size
    pooled = torch.rand(SPAN, filters, groups)
    features = _sincnet_rest(model, pooled[:1])
    frames = features.shape[-1]
    fbank = torch.randn(1, 80, round(TILE_S * 100))
    trunk = network.onnx_trunk
    size = 2048
    a, b = torch.randn(size, size), torch.randn(size, size)
    a16, b16 = a.bfloat16(), b.bfloat16()

    flops = {
        "matmul_float32": 2 * size**3, "matmul_bfloat16": 2 * size**3,
        "lstm_span": lstm_flops(model.lstm, SPAN, frames),
        "campplus_trunk_tile": counted_flops(lambda: network.campplus.xvector[:-2](network.campplus.head(fbank))),
    }
    calls = {
        "matmul_float32": lambda: a @ b, "matmul_bfloat16": lambda: a16 @ b16,
        "lstm_span": lambda: model.lstm(features.expand(SPAN, -1, -1).transpose(1, 2).contiguous()),
        "campplus_trunk_tile": lambda: trunk(fbank),
    }
    with torch.inference_mode():
        for call in calls.values():
            call()  # warm-up
        seen = interleaved(calls, RUNS)
    rates = {name: round(flops[name] / row["median_cpu_s"] / 1e9, 1) for name, row in seen.items()}
    peak = rates["matmul_float32"] * 1e9

    # The model after the shared first layer, per window: SincNet's later layers, the LSTM, linear + classifier.
    rest_flops = counted_flops(lambda: _after_sincnet(model, _sincnet_rest(model, pooled[:1])))
    per_window = rest_flops + lstm_flops(model.lstm, 1, frames)
    windows = int((seconds - WINDOW_S) // STEP_S) + 1
    first_layer = 2 * filters * taps * (round(seconds * RATE) // encoder.stride)
    trunk_flops = flops["campplus_trunk_tile"] * seconds / TILE_S
    floor = {"segmentation_s": round((windows * per_window + first_layer) / peak, 2),
             "campplus_trunk_s": round(trunk_flops / peak, 2)}
    floor["total_s"] = round(sum(floor.values()), 2)
    result = {
        "command": f"{COMMAND} {seconds:g}", "threads": 1, "loadavg": loadavg(),
        "gflop_per_s": rates,
        "share_of_float32_peak": {name: round(rates[name] / rates["matmul_float32"], 2)
                                  for name in ("lstm_span", "campplus_trunk_tile")},
        "gflop": {"segmentation_window": round(per_window / 1e9, 3), "first_layer_input": round(first_layer / 1e9, 1),
                  "campplus_trunk_per_audio_s": round(flops["campplus_trunk_tile"] / TILE_S / 1e9, 3)},
        "seconds": seconds, "windows": windows, "float32_floor_cpu": floor,
    }
    print(json.dumps(result, indent=1))
    OUT.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0)
