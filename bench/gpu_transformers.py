"""GPU benchmark of the transformers path: a randomly initialised Whisper of large-v3's size, fp16 + SDPA.

    python bench/gpu_transformers.py [--batch-sizes 1 4 8 16] [--decode-tokens 128] [--out gpu.json]
    python bench/gpu_transformers.py --size tiny --device cpu      # check that it runs, anywhere

No weights are downloaded (a GPU machine may carry only a few MiB per call): the model is built from
large-v3's configuration with random weights, so its text is meaningless and its speed is the real
model's. Decoding runs a fixed number of greedy steps with the KV cache (random weights would stop
at a random point), one 30 s window per batch row. Speculative decoding is not measured here: a
random assistant's acceptance rate says nothing about a real pair's. Report GPU figures only from a
run on a GPU (``measured_on`` in the output says where it ran).
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import statistics
import sys
import time
from pathlib import Path

SIZES = {
    # openai/whisper-large-v3's architecture (config.json), 1.55 B parameters
    "large-v3": dict(d_model=1280, encoder_layers=32, decoder_layers=32, encoder_attention_heads=20,
                     decoder_attention_heads=20, encoder_ffn_dim=5120, decoder_ffn_dim=5120, num_mel_bins=128,
                     vocab_size=51866),
    # a toy of the same shape family, for checking the script on a CPU
    "tiny": dict(d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                 decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=128,
                 vocab_size=51866),
}
PROMPT = (50258, 50259, 50360, 50364)  # <|startoftranscript|><|en|><|transcribe|><|notimestamps|> in large-v3
FRAMES = 3000  # one 30 s window of log-mel frames


def build(size: str, device: str, dtype, attention: str):
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(**SIZES[size], attn_implementation=attention)
    with torch.device(device):  # initialise on the device: a 1.55 B model is slow to initialise on a CPU
        model = WhisperForConditionalGeneration(config)
    return model.to(dtype).eval(), config


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def one_pass(model, features, steps: int, device: str) -> tuple[float, float]:
    """Encoder once, then ``steps`` greedy decoder steps with the cache. Returns (encoder_s, decode_s)."""
    import torch

    batch = features.shape[0]
    with torch.inference_mode():
        sync(device)
        started = time.perf_counter()
        encoded = model.model.encoder(features)
        sync(device)
        encoder_s = time.perf_counter() - started
        tokens = torch.tensor([PROMPT] * batch, device=features.device)
        # transformers 5 names the KV cache `cache` (older releases: `past_key_values`)
        key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        past = None
        started = time.perf_counter()
        for _ in range(steps):
            out = model(decoder_input_ids=tokens, encoder_outputs=encoded, use_cache=True, **{key: past})
            past = getattr(out, key)
            tokens = out.logits[:, -1:].argmax(-1)
        sync(device)
        return encoder_s, time.perf_counter() - started


def measure(size: str, device: str, batch_sizes, steps: int, repeats: int, attention: str) -> dict:
    import torch

    dtype = torch.float16 if device == "cuda" else torch.float32
    model, config = build(size, device, dtype, attention)
    rows = []
    for batch in batch_sizes:
        features = torch.randn(batch, config.num_mel_bins, FRAMES, device=device, dtype=dtype)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        one_pass(model, features, min(steps, 4), device)  # warm-up: kernels, allocator
        runs = [one_pass(model, features, steps, device) for _ in range(repeats)]
        encoder_s = statistics.median(r[0] for r in runs)
        decode_s = statistics.median(r[1] for r in runs)
        total = encoder_s + decode_s
        rows.append({
            "batch_size": batch, "encoder_s": round(encoder_s, 4), "decode_s": round(decode_s, 4),
            "tokens_per_s": round(batch * steps / decode_s, 1),
            "audio_s_per_s": round(batch * 30 / total, 1),  # 30 s windows, `steps` tokens each
            "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None,
        })
    return {
        "model": f"random {size} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f} M parameters)",
        "dtype": str(dtype).removeprefix("torch."), "attention": attention, "decode_tokens": steps,
        "repeats": repeats, "measured_on": torch.cuda.get_device_name() if device == "cuda" else f"cpu ({platform.machine()})",
        "torch": torch.__version__, "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=list(SIZES), default="large-v3")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 8, 16, 24])
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--attention", default="sdpa", help="sdpa (default) or eager")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cpu" and args.size == "large-v3":
        print("no CUDA device: large-v3 on a CPU measures nothing useful; use --size tiny to check the script",
              file=sys.stderr)
        return 2
    result = measure(args.size, device, args.batch_sizes, args.decode_tokens, args.repeats, args.attention)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
