"""Long audio on CTranslate2: the speech packed into windows (asr/long_form/windows.py), decoded
``batch_size`` windows at a time through faster-whisper's batched pipeline, each batch followed by the
second pass over what its windows left out, so the segments come out final and in time order and are
reported after every batch. Each window is judged (asr/long_form/failed_windows.py) and a failed one decoded
again (asr/long_form/recovery.py); speech in several languages is decoded one language at a time. Stops
where the request's window budget is spent (cost.py)."""

from __future__ import annotations

import logging

from whisper_endpoint.asr import decoding_options
from whisper_endpoint.asr.ctranslate2.decode_state import DecodeState, retry
from whisper_endpoint.asr.ctranslate2.model import RequestPipeline, as_segment, consume
from whisper_endpoint.asr.languages.language_parts import LanguagePlan
from whisper_endpoint.asr.long_form import recovery, window_fallback, windows
from whisper_endpoint.core.types import Segment

logger = logging.getLogger(__name__)


def decode(state: DecodeState, plan: LanguagePlan, window_s: float, batch_size: int) -> tuple[list[Segment], str,
                                                                                             float | None]:
    """The segments of ``plan``'s windows (each in one language: language_parts.cut_for_decoding), the
    main language and how sure its detection was; ``state.decoding`` says how it went."""
    state.decoding.update({"mode": "batched", "batch_size": batch_size, "beam_size": state.kwargs["beam_size"],
                           "chunk_length_s": window_s, "segmentation": "vad", "remainders_decoded_again": 0,
                           "windows_decoded_again": 0, "windows_not_recovered": 0, "stopped": False})
    packed = plan.packed
    if not packed.windows:
        state.context.report(0, 0, [])
        return [], state.options.language, None
    segments, skipped, total = [], 0, len(packed.windows)
    state.context.report(0, total)
    batches = _Batches(state, plan, batch_size)
    for first in range(0, total, batch_size):
        group = packed.windows[first: first + batch_size]
        found, skipped_now = batches.group(group)
        skipped += skipped_now
        segments += [as_segment(s, language) for s, language in found if _kept(s, state)]
        state.context.report(first + len(group), total, segments)
        if state.decoding["stopped"]:
            break
    batches.budget.report(state.decoding, state.counter.notes)
    if skipped:
        state.counter.notes.append(
            f"{skipped} of {skipped + state.decoding['remainders_decoded_again']} window remainders were not "
            f"decoded again: the request's bound of {state.counter.budget} encoder windows was spent"
        )
    if plan.mixed:
        state.decoding["languages_decoded"] = sorted({code for _, _, code in plan.spans})
    return segments, plan.language, plan.probability


class _Batches:
    """The batches of one request: its plan, its pipeline (one per request) and its batch size."""

    def __init__(self, state: DecodeState, plan: LanguagePlan, batch_size: int):
        self.state, self.plan, self.batch_size = state, plan, batch_size
        self.budget = recovery.Budget(len(plan.packed.windows))
        self.packed = plan.packed
        self.pipeline = RequestPipeline(state.model)

    def group(self, group: list[windows.Window]) -> tuple[list, int]:
        """One batch of windows: (faster-whisper segment in original time, its language) in time order, and
        the number of remainders not decoded again (the budget was spent). Windows in several languages
        are decoded one language at a time."""
        language_of = {window: self.plan.language_of(window) for window in group}
        found, skipped = [], 0
        for language in dict.fromkeys(language_of.values()):
            own = [window for window in group if language_of[window] == language]
            decoded, skipped_now = self.windows(own, {**self.state.kwargs, "language": language})
            skipped += skipped_now
            found += [(segment, language) for segment in decoded]
            if self.state.decoding["stopped"]:
                break
        found.sort(key=lambda pair: pair[0].start)
        restored = self.packed.original_times([segment for segment, _ in found])
        return [(segment, language) for segment, (_, language) in zip(restored, found)], skipped

    def windows(self, group: list[windows.Window], kwargs: dict) -> tuple[list, int]:
        """``group``'s windows in one language, each judged and a failed one decoded again, with the second
        pass over their remainders (recovery.second_pass; packed time), each segment within its window."""
        state, decoding, counter = self.state, self.state.decoding, self.state.counter
        try:
            generator, _ = self.pipeline.transcribe(
                self.packed.audio, batch_size=self.batch_size, clip_timestamps=[w.clip() for w in group], **kwargs
            )
            found, decoding["stopped"] = consume(generator)
        except window_fallback.PASSED_ON:
            raise
        except Exception:  # one window's error: each window of the batch decoded alone (window_fallback.py)
            logger.exception("request %s: a batch of %d windows failed; decoding each alone", counter.request_id,
                             len(group))
            counter.notes.append(f"a batch of {len(group)} window(s) was decoded again window by window after an "
                                 f"error (request {counter.request_id})")
            found = [segment for window in group for segment in state.alone(self.packed.audio, window, kwargs)]
            decoding["stopped"] = counter.spent  # a window decoded alone stops silently at the bound
        audio = self.packed.audio
        found, skipped = recovery.second_pass(
            group, found, self.packed, self.budget, counter, decoding,
            again=lambda window: state.alone(audio, window, retry(kwargs)),
            alone=(lambda window: state.alone(audio, window, kwargs)) if state.options.recover_dropped_speech else None)
        return windows.within(found, group), skipped


def _kept(segment, state: DecodeState) -> bool:
    # The batched pipeline ignores no_speech_threshold: applied here when the request sets it.
    explicit = "no_speech_threshold" in state.options.model_fields_set
    return not explicit or decoding_options.keep(segment, state.options.no_speech_threshold)
