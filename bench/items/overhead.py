"""Item 1: the handler against raw faster-whisper and the raw transformers pipeline, same audio and
settings (greedy, segment timestamps, the input's language given), variants interleaved, medians."""

from __future__ import annotations

import functools

from bench import backends, inputs
from support.measure import interleaved

LENGTHS = ("short", "long")


def _ratio(result: dict, mine: str, theirs: str, key: str = "median_cpu_s") -> float:
    """Handler over raw, on CPU time by default (see measure.timed_cpu); key="median_s" for wall time."""
    return round(result[mine][key] / result[theirs][key], 3)


def _summarise(result: dict, raw: str) -> dict:
    """Keep times, whether the texts match, and how much they differ (WER of the handler's text
    against the raw backend's); drop the transcripts themselves."""
    from support.metrics import wer

    texts = {name: entry.pop("result") for name, entry in result.items()}
    return {"variants": result, "same_text": len(set(texts.values())) == 1,
            "handler_vs_raw_wer": round(100 * wer([texts[raw]], [texts["handler"]]), 2),
            "text_chars": {name: len(text) for name, text in texts.items()}}


def _inputs(plan, long_s: float | None, lengths) -> list[tuple[str, object, int, str]]:
    """(label, samples, repeats, language) for the requested lengths."""
    chosen = []
    if "short" in lengths:
        chosen.append(("short", inputs.clip(plan.short_clip), plan.repeats, inputs.clip_language(plan.short_clip)))
    if "long" in lengths:
        chosen.append(("long", inputs.long_audio(plan, long_s), 1, plan.language))
    return chosen


def ctranslate2(plan, lengths=LENGTHS) -> dict:
    from faster_whisper import BatchedInferencePipeline

    handler = backends.handler(plan.model)
    raw = backends.raw_faster_whisper(plan.model)
    batched = BatchedInferencePipeline(raw)
    out = {}
    for label, audio, repeats, language in _inputs(plan, plan.long_s, lengths):
        long = label == "long"

        def mine(audio=audio, language=language, **parameters):  # greedy, as raw (long audio's default is a beam)
            return backends.ask(handler, audio, language=language, beam_size=1, **parameters)["text"]

        def theirs(audio=audio, language=language, long=long):
            if long:  # what a faster-whisper user runs on long audio: its batched pipeline, batch 24 as ours
                segments, _ = batched.transcribe(audio, language=language, batch_size=24, beam_size=1,
                                                 without_timestamps=False)
            else:
                segments, _ = raw.transcribe(audio, language=language, beam_size=1)
            return backends.fw_text(segments)

        variants = {"handler": mine, "raw_faster_whisper": theirs}
        if long:  # the same work as raw: without the second pass over windows that stopped early
            variants["handler_no_recovery"] = functools.partial(mine, recover_dropped_speech=False)
        if plan.warmup:  # first calls pay one-off costs (the VAD model, buffers); long: on a 60 s excerpt
            for call in variants.values():
                call(audio[: 60 * inputs.RATE] if long else audio)
        result = interleaved(variants, repeats)
        out[label] = {"audio_s": inputs.seconds_of(audio), "language": language, "repeats": repeats,
                      **_summarise(result, "raw_faster_whisper"),
                      "ratio_handler_over_raw": _ratio(result, "handler", "raw_faster_whisper"),
                      "ratio_handler_over_raw_wall": _ratio(result, "handler", "raw_faster_whisper", "median_s")}
        if long:
            out[label]["ratio_handler_no_recovery_over_raw"] = _ratio(result, "handler_no_recovery", "raw_faster_whisper")
    return out


def transformers(plan, lengths=LENGTHS) -> dict:
    handler = backends.handler(plan.model, asr_backend="transformers")
    raw_default = backends.raw_pipeline(plan.model)  # attention as transformers picks it (sdpa)
    raw_eager = backends.raw_pipeline(plan.model, attention="eager")
    out = {}
    for label, audio, repeats, language in _inputs(plan, plan.transformers_long_s, lengths):
        long = label == "long"
        kwargs = backends.pipeline_kwargs(plan.model, language)
        decoding: dict = {}

        def mine(audio=audio, language=language, decoding=decoding):
            response = backends.ask(handler, audio, language=language)
            decoding.update(response["decoding"])
            return response["text"]

        def pipe(raw, audio=audio, kwargs=kwargs, chunked=False):
            """Without chunk_length_s the pipeline runs Whisper's sequential long-form generate on long
            audio; with it, 30 s chunks in batches of 24."""
            def call():
                extra = {"chunk_length_s": 30, "batch_size": 24} if chunked else {}
                return raw(audio.copy(), return_timestamps=True, generate_kwargs=dict(kwargs), **extra)["text"].strip()
            return call

        variants = {"handler": mine, "raw_pipeline": pipe(raw_default), "raw_pipeline_eager": pipe(raw_eager)}
        if long:  # the eager twin only on short audio (fp32 on long audio takes minutes); both long-audio modes
            variants["raw_pipeline_chunked"] = pipe(raw_default, chunked=True)
            variants.pop("raw_pipeline_eager")
        elif plan.warmup:
            for call in variants.values():
                call()
        result = interleaved(variants, repeats)
        entry = {"audio_s": inputs.seconds_of(audio), "language": language, "repeats": repeats,
                 **_summarise(result, "raw_pipeline"), "ratio_handler_over_raw": _ratio(result, "handler", "raw_pipeline"),
                 "ratio_handler_over_raw_wall": _ratio(result, "handler", "raw_pipeline", "median_s")}
        entry["handler_decoding"] = decoding.get("mode")
        for other in ("raw_pipeline_eager", "raw_pipeline_chunked"):
            if other in result:
                entry[f"ratio_handler_over_{other.removeprefix('raw_pipeline_')}"] = _ratio(result, "handler", other)
        out[label] = entry
    return out


def run(plan) -> dict:
    return {"ctranslate2": ctranslate2(plan), "transformers": transformers(plan)}


def run_transformers(plan) -> dict:
    """The transformers half alone (``--items overhead_transformers``), e.g. after that backend changed."""
    return {"transformers": transformers(plan)}


def run_ctranslate2(plan) -> dict:
    """The ctranslate2 half alone (``--items overhead_ctranslate2``), e.g. after its windows changed."""
    return {"ctranslate2": ctranslate2(plan)}


def run_short(plan) -> dict:
    """Both backends on the short clip only (``--items overhead_short``)."""
    return {"ctranslate2": ctranslate2(plan, ("short",)), "transformers": transformers(plan, ("short",))}
