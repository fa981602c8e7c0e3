"""Item 4: batch size sweep for chunked long audio (the handler's batched ctranslate2 path)."""

from __future__ import annotations

from bench import backends, inputs
from support.measure import interleaved


def run(plan) -> dict:
    handler = backends.handler(plan.model)
    audio = inputs.long_audio(plan, plan.sweep_s)
    backends.ask(handler, inputs.clip(plan.short_clip), language=plan.language)  # warm-up
    result = interleaved({
        f"batch_{size}": (lambda size=size: backends.ask(handler, audio, language=plan.language, batch_size=size))
        for size in plan.batch_sizes
    }, 1)
    texts = {name: entry.pop("result")["text"] for name, entry in result.items()}
    first = next(iter(texts.values()))
    return {
        "audio_s": inputs.seconds_of(audio),
        "windows_note": "windows hold at most 30 s of speech (pauses cut out), so batches above the window count decode the same",
        "times": {name: entry["median_s"] for name, entry in result.items()},
        "cpu_times": {name: entry["median_cpu_s"] for name, entry in result.items()},
        "same_text_as_batch_1": {name: text == first for name, text in texts.items()},
    }
