"""Item 2: backends and precision on CPU, batched vs sequential, beam size, timestamp level.

Short-clip variants go through the handler (what a user gets); batched vs sequential is a
faster-whisper choice the handler makes by length, so it is measured on raw faster-whisper."""

from __future__ import annotations

from bench import backends, inputs
from support.measure import interleaved


def _times(result: dict, baseline: str) -> dict:
    """Medians, and each variant's CPU time relative to the baseline's (robust to other jobs' load)."""
    base = result[baseline]["median_cpu_s"]
    return {name: {"median_s": entry["median_s"], "runs_s": entry["runs_s"], "median_cpu_s": entry["median_cpu_s"],
                   "relative": round(entry["median_cpu_s"] / base, 3)} for name, entry in result.items()}


def _warm_and_time(variants: dict, repeats: int, warmup: bool) -> dict:
    for call in variants.values() if warmup else ():
        call()
    return interleaved(variants, repeats)


def run(plan) -> dict:
    audio, language = inputs.clip(plan.short_clip), inputs.clip_language(plan.short_clip)
    int8 = backends.handler(plan.model)  # compute_type auto = int8 on CPU
    fp32 = backends.handler(plan.model, compute_type="float32")
    torch_fp32 = backends.handler(plan.model, asr_backend="transformers")

    def ask(h, **parameters):
        return lambda: backends.ask(h, audio, language=language, **parameters)["text"]

    precision = _warm_and_time({"ctranslate2_int8": ask(int8), "ctranslate2_float32": ask(fp32),
                                "transformers_float32": ask(torch_fp32)}, plan.repeats, plan.warmup)
    texts = {name: entry["result"] for name, entry in precision.items()}
    beams = _warm_and_time({f"beam_{n}": ask(int8, beam_size=n) for n in (1, 2, 5)}, plan.repeats, plan.warmup)
    stamps = _warm_and_time({f"timestamps_{kind}": ask(int8, return_timestamps=kind)
                             for kind in ("none", "segment", "word")}, plan.repeats, plan.warmup)
    del fp32, torch_fp32

    long = inputs.long_audio(plan, plan.sequential_vs_batched_s)
    from faster_whisper import BatchedInferencePipeline

    raw = backends.raw_faster_whisper(plan.model)
    batched = BatchedInferencePipeline(raw)
    language = plan.language  # the long file's
    modes = interleaved({
        "faster_whisper_sequential": lambda: backends.fw_text(raw.transcribe(long, language=language, beam_size=1)[0]),
        "faster_whisper_batched_24": lambda: backends.fw_text(
            batched.transcribe(long, language=language, beam_size=1, batch_size=24, without_timestamps=False)[0]),
        "handler_batched_24": lambda: backends.ask(int8, long, language=language, beam_size=1)["text"],
    }, 1)
    return {
        "short_clip_s": inputs.seconds_of(audio),
        "repeats": plan.repeats,
        "precision": _times(precision, "ctranslate2_int8"),
        "precision_same_text": {name: text == texts["ctranslate2_int8"] for name, text in texts.items()},
        "beam_size": _times(beams, "beam_1"),
        "timestamps": _times(stamps, "timestamps_none"),
        "sequential_vs_batched": {"audio_s": inputs.seconds_of(long), **_times(modes, "faster_whisper_sequential")},
    }
