"""The decoding options a request may set (``temperature``, ``hotwords``, ``condition_on_previous_text``,
``no_speech_threshold``) as each backend takes them, and what a decoding path cannot apply (said in
``warnings``, never dropped silently).

- ctranslate2, sequential (audio within one window): all four are faster-whisper's own options.
- ctranslate2, batched (long audio): faster-whisper's batched pipeline takes the first temperature only
  (no fallback; the second pass over dropped speech has it), takes hotwords, never conditions a window on
  the previous one (they are decoded at once) and ignores ``no_speech_threshold``: here Whisper's rule is
  applied to its segments (``keep``).
- transformers: ``temperature`` > 0 samples (0: greedy, no fallback schedule, as before); hotwords are
  a prompt before ``initial_prompt`` (what faster-whisper does with them: both go after
  ``<|startofprev|>``, in one budget: tokens.py); long audio is decoded in windows as on ctranslate2,
  batched (never conditioned on the previous window); ``no_speech_threshold``, when set, applies Whisper's
  rule to the windows as confidence.py scores them (transformers' own needs a log-probability fallback).
"""

from __future__ import annotations

from whisper_endpoint.core.config import InferenceConfig

# Whisper's (and faster-whisper's) schedule: a window is decoded again hotter when its text repeats
# (compression ratio > 2.4) or is unlikely (average log-probability < -1).
FALLBACK_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
LOGPROB_THRESHOLD = -1.0
# Long audio (batched windows) when the request sets no beam_size: a beam of 3 lost fewer words than greedy
# on the dev dialogues (pooled WER 31.8% vs 33.5%, embedded:base) at about greedy's CPU, and beam 5 (31.1%)
# cost ~1.2x (docs/long_form_accuracy.md). Audio within one window stays greedy, as the reference handler.
LONG_FORM_BEAM_SIZE = 3


def beam_size(options: InferenceConfig, *, long_form: bool) -> int:
    """The request's ``beam_size`` when it sets one (``beam_size: 1``: greedy long audio, the cheaper
    mode); otherwise 1 within one window and ``LONG_FORM_BEAM_SIZE`` over batched windows."""
    if long_form and "beam_size" not in options.model_fields_set:
        return LONG_FORM_BEAM_SIZE
    return options.beam_size


def faster_whisper_kwargs(options: InferenceConfig) -> dict:
    return dict(
        temperature=list(FALLBACK_TEMPERATURES) if options.temperature == 0 else options.temperature,
        condition_on_previous_text=options.condition_on_previous_text,
        no_speech_threshold=options.no_speech_threshold,
    )


def batched_warnings(options: InferenceConfig) -> list[str]:
    """What faster-whisper's batched pipeline cannot do that this request asked for explicitly."""
    if options.condition_on_previous_text and "condition_on_previous_text" in options.model_fields_set:
        return ["condition_on_previous_text applies to audio decoded window after window; long audio is decoded "
                "in batches of independent windows (each without the previous text)"]
    return []


def keep(segment, no_speech_threshold: float) -> bool:
    """Whisper's no-speech rule, for paths that do not apply it themselves: a segment goes when its
    window's no-speech probability is over the threshold and its average log-probability under -1."""
    if segment.no_speech_prob is None or segment.avg_logprob is None:
        return True
    return not (segment.no_speech_prob > no_speech_threshold and segment.avg_logprob < LOGPROB_THRESHOLD)


def transformers_kwargs(options: InferenceConfig) -> dict:
    kwargs: dict = {"do_sample": options.temperature > 0}
    if options.temperature > 0:
        kwargs["temperature"] = options.temperature
    return kwargs
