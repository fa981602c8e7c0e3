"""Audio that fits one window, on CTranslate2: faster-whisper's ``transcribe`` (Whisper's own seek
within the window, conditioned on the previous text), reported segment by segment; the window judged
as the batched ones are (asr/long_form/failed_windows.py) and decoded again when it failed."""

from __future__ import annotations

from whisper_endpoint.asr import cost, speech
from whisper_endpoint.asr.ctranslate2.decode_state import DecodeState, named, retry
from whisper_endpoint.asr.ctranslate2.model import as_segment, consume
from whisper_endpoint.asr.long_form import recovery, window_fallback, windows
from whisper_endpoint.core.types import SAMPLE_RATE, Segment


def decode(state: DecodeState) -> tuple[list[Segment], str | None, float | None]:
    """The window's segments, its language and how sure the detection was; ``state.decoding`` says how
    it went."""
    segments, language, probability, stopped, speech_s = _decoded(state)
    state.decoding.update({"mode": "sequential", "batch_size": 1, "stopped": stopped})
    return _checked(state, segments, speech_s), language, probability


def _decoded(state: DecodeState):
    """One window (Whisper's own seek within it): reported segment by segment; decoded again the plain
    way after an error (window_fallback.py)."""
    samples, options, kwargs, context = state.samples, state.options, state.kwargs, state.context
    context.report(0, 1)
    found = {}

    def decode(attempt: dict) -> list[Segment]:
        first = "info" not in found  # a try after an error reports its segments once, at the end
        generator, info = state.model.transcribe(samples, vad_filter=options.vad_filter, **attempt)
        found.update(info=info, stopped=False)
        segments = []
        try:
            for segment in generator:  # the generator does the decoding
                segments.append(as_segment(segment, info.language))
                if first:
                    context.report(0, 1, segments)
        except cost.BudgetSpent:
            found["stopped"] = True
        return segments

    segments = window_fallback.decoded(decode, kwargs, f"the window of {len(samples) / SAMPLE_RATE:.1f} s",
                                       state.counter)
    context.report(1, 1, segments)
    info = found.get("info")
    if info is None:  # every try failed before the decoder started
        return segments, kwargs["language"], None, False, None
    speech_s = info.duration_after_vad if options.vad_filter else None
    return segments, info.language, info.language_probability, found["stopped"], speech_s


def _checked(state: DecodeState, segments: list[Segment], speech_s: float | None) -> list[Segment]:
    """The one window judged as the batched ones are (failed_windows.py); decoded again when it failed."""
    samples, kwargs = state.samples, state.kwargs
    state.decoding.update(windows_decoded_again=0, windows_not_recovered=0)
    if state.decoding["stopped"]:
        return segments
    reason = recovery.needed(recovery.judged(segments, speech_s), state.counter.notes)
    if reason is None:
        return segments

    def decode(window: windows.Window) -> list[Segment]:
        piece = samples[round(window.start * SAMPLE_RATE): round(window.end * SAMPLE_RATE)]

        def attempt(options_now: dict) -> list[Segment]:
            generator, _ = state.model.transcribe(piece, vad_filter=state.options.vad_filter, **options_now)
            return [as_segment(windows.shifted(s, window.start), kwargs["language"])
                    for s in consume(generator)[0]]

        return window_fallback.decoded(attempt, retry(kwargs), named(window), state.counter)

    spans = speech.find_speech(samples).spans
    pauses = [(end + start) / 2 for (_, end), (start, _) in zip(spans, spans[1:])]
    whole = windows.Window(0.0, len(samples) / SAMPLE_RATE)
    again = recovery.recover(whole, segments, decode, recovery.quiet_cuts(samples, whole, pauses), reason,
                             speech_s=speech_s)
    recovery.count(again, state.decoding, state.counter.notes)
    return again.segments
