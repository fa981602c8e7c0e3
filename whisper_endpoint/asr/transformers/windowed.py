"""Windows decoded on transformers as on CTranslate2 (asr/ctranslate2/batched.py, asr/ctranslate2/sequential.py).

Long audio: the speech packed into windows (asr/long_form/windows.py), each in its language
(asr/languages/), decoded ``batch_size`` windows at a time through the pipeline (each window one short-form
``generate``); each window judged (asr/long_form/failed_windows.py) and a failed one decoded again in pieces
(asr/long_form/recovery.py); where a window's transcript stops early, its remainder decoded alone, as
Whisper's seek would. Audio that fits one window is one such window (``one_window``), judged the same way.

A window decoded again goes through transformers' own temperature fallback (compression ratio only, a few
temperatures deep: recovery.py), one sample at each temperature (faster-whisper takes the best of two). An
error in a batch decodes its windows alone, each plainer after an error (window_fallback.py). Stops where
the request's window budget is spent (cost.py) or where the request is stopped (its ``DecodeContext``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from whisper_endpoint.asr import cost, speech, tokens
from whisper_endpoint.asr.languages.language_parts import LanguagePlan
from whisper_endpoint.asr.long_form import recovery, window_fallback, windows
from whisper_endpoint.asr.transformers import output
from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Word

logger = logging.getLogger(__name__)
# Whisper's fallback threshold (faster-whisper's default): a window decoded again goes hotter above it.
COMPRESSION_RATIO_THRESHOLD = 2.4
_RETURNED = {"none": False, "segment": True, "word": "word"}  # the pipeline's return_timestamps for each kind


@dataclass
class _Word:  # mutable while windows are shifted and moved back to the original time
    start: float
    end: float
    word: str
    probability: float | None = None


@dataclass
class _Segment:
    start: float
    end: float
    text: str
    words: list[_Word] | None = None


class Decoder:
    """One request's windows through the backend's pipelines: ``decoding`` (the response's block) and the
    request's ``counter`` say how it went."""

    def __init__(self, backend, request, counter: cost.WindowCounter):
        """``backend``: the TransformersBackend; ``request``: its ``_Request`` (samples, options, context,
        warnings, generate's options)."""
        self.backend, self.request, self.counter = backend, request, counter
        self.asked = request.options.return_timestamps
        self.decoding: dict = {"windows_decoded_again": 0, "windows_not_recovered": 0, "stopped": False}

    def one_window(self, language: str | None) -> list[Segment]:
        """Audio that fits one window, in ``language`` (None: as Whisper detects), judged and a failed
        decode decoded again in pieces cut at the speech's pauses."""
        samples, options, kwargs = self.request.samples, self.request.options, self._in(language)
        if "condition_on_previous_text" in options.model_fields_set:  # generate's seeks within the window
            kwargs = {**kwargs, "condition_on_prev_tokens": options.condition_on_previous_text}
        whole = windows.Window(0.0, len(samples) / SAMPLE_RATE)
        self.decoding.update(mode="sequential", batch_size=1)
        self.request.context.report(0, 1)
        try:
            found = self._decoded(samples, whole, kwargs, capped=False)
            reason = recovery.needed(recovery.judged(found, None), self.counter.notes)
            if reason is not None:
                spans = speech.find_speech(samples).spans
                pauses = [(end + start) / 2 for (_, end), (start, _) in zip(spans, spans[1:])]
                again = recovery.recover(whole, found, lambda w: self._decoded(samples, w, self._retry(kwargs)),
                                         recovery.quiet_cuts(samples, whole, pauses), reason, speech_s=None)
                recovery.count(again, self.decoding, self.counter.notes)
                found = again.segments
        except cost.BudgetSpent:
            found, self.decoding["stopped"] = [], True
        segments = _final(found, language)
        self.request.context.report(1, 1, segments)
        return segments

    def plan(self, plan: LanguagePlan, batch_size: int) -> tuple[list[Segment], str, float | None]:
        """The segments of ``plan``'s windows (each in one language), the main language and how sure its
        detection was."""
        self.decoding.update(mode="batched", batch_size=batch_size, beam_size=self.request.generate_kwargs["num_beams"],
                             chunk_length_s=self.request.window_s, segmentation="vad", remainders_decoded_again=0)
        packed, context = plan.packed, self.request.context
        total, segments, skipped = len(packed.windows), [], 0
        budget = recovery.Budget(total)
        context.report(0, total)
        for first in range(0, total, batch_size):
            group = packed.windows[first: first + batch_size]
            try:
                for language in dict.fromkeys(map(plan.language_of, group)):
                    own = [window for window in group if plan.language_of(window) == language]
                    found, skipped_now = self._windows(packed, own, budget, self._in(language))
                    skipped += skipped_now
                    segments += _final(packed.original_times(found), language)
            except cost.BudgetSpent:
                self.decoding["stopped"] = True
            segments.sort(key=lambda segment: segment.start)
            context.report(first + len(group), total, segments)
            if self.decoding["stopped"]:
                break
        budget.report(self.decoding, self.counter.notes)
        if skipped:
            self.counter.notes.append(
                f"{skipped} of {skipped + self.decoding['remainders_decoded_again']} window remainders were not "
                f"decoded again: the request's bound of {self.counter.budget} encoder windows was spent")
        if plan.mixed:
            self.decoding["languages_decoded"] = sorted({code for _, _, code in plan.spans})
        return segments, plan.language, plan.probability

    def _windows(self, packed: windows.PackedSpeech, group: list[windows.Window], budget: recovery.Budget,
                 kwargs: dict) -> tuple[list[_Segment], int]:
        """``group``'s windows in one language (packed time), decoded in one batch, each judged and a failed
        one decoded again, with the second pass over their remainders; and the remainders left (the budget
        was spent)."""
        audio = packed.audio
        try:
            # One decode per window where transformers can: with word times it cannot (its token times
            # then miss the window's last tokens: IndexError in the pipeline), and generate seeks on.
            decoded = self._decode([windows.audio_of(audio, w.start, w.end) for w in group], kwargs, self.asked,
                                   once=self.asked != "word")
            found = [s for window, mine in zip(group, decoded) for s in _shifted(mine, window.start)]
        except window_fallback.PASSED_ON:
            raise
        except Exception:  # one window's error: each window of the batch decoded alone (window_fallback.py)
            logger.exception("request %s: a batch of %d windows failed; decoding each alone", self.counter.request_id,
                             len(group))
            self.counter.notes.append(f"a batch of {len(group)} window(s) was decoded again window by window after "
                                      f"an error (request {self.counter.request_id})")
            found = [s for window in group for s in self._decoded(audio, window, kwargs)]
        found, skipped = recovery.second_pass(
            group, found, packed, budget, self.counter, self.decoding,
            again=lambda window: self._decoded(audio, window, self._retry(kwargs)),
            alone=(lambda window: self._decoded(audio, window, kwargs))
            if self.request.options.recover_dropped_speech else None)
        found.sort(key=lambda segment: segment.start)
        return windows.within(found, group), skipped

    def _decoded(self, audio: np.ndarray, window: windows.Window, kwargs: dict, capped: bool = True) -> list[_Segment]:
        """``window`` of ``audio`` alone, decoded again plainer after an error (window_fallback.py);
        ``capped``: at most a token count no speech rate reaches, so that a loop stops early."""
        piece = windows.audio_of(audio, window.start, window.end)
        if capped:
            prompt = kwargs.get("prompt_ids")
            limit = min(math.ceil(10 * (window.end - window.start)) + 16,
                        tokens.output_budget(self.backend.model.config.max_target_positions)
                        - (0 if prompt is None else len(prompt)))
            kwargs = {**kwargs, "max_new_tokens": limit}
        try:
            found = window_fallback.first_that_works(
                lambda attempt: self._decode([piece], attempt[1], attempt[0])[0], _attempts(self.asked, kwargs),
                f"a window of {window.end - window.start:.1f} s of speech", self.counter, given_up=[])
        except cost.BudgetSpent:  # the request's bound: what was decoded before stands
            self.decoding["stopped"] = True
            return []
        return _shifted(found, window.start)

    def _decode(self, pieces: list[np.ndarray], kwargs: dict, kind: str, once: bool = False) -> list[list[_Segment]]:
        """The pieces (each at most one window) through the pipeline in one batch, each piece's segments in its
        own time. ``generate``
        seeks on from a piece's last timestamp, as Whisper's sequential decoder does; ``once``: one decode per
        piece, as a batch of windows is decoded (its remainders are decoded again where they hold speech:
        ``_windows``), not an encoder pass over a window's padding."""
        pipe = self.backend.word_pipe if kind == "word" else self.backend.pipe
        outputs = pipe([{"raw": piece, "sampling_rate": SAMPLE_RATE} for piece in pieces], batch_size=len(pieces),
                       return_timestamps=_RETURNED[kind], generate_kwargs={**kwargs, "force_unique_generate_call": once})
        return [_mutable(output.segments(out, kind, len(piece) / SAMPLE_RATE)) for out, piece in zip(outputs, pieces)]

    def _in(self, language: str | None) -> dict:
        """generate's options for windows in ``language`` (multilingual models: English-only ones refuse it)."""
        kwargs = self.request.generate_kwargs
        return {**kwargs, "language": language} if self.backend.is_multilingual and language else kwargs

    def _retry(self, kwargs: dict) -> dict:
        """A failed window's decode again: the temperature fallback on repetition, without the prompt (a loop
        feeds on text before it) and unassisted (speculative decoding is for greedy decoding)."""
        kept = {k: v for k, v in kwargs.items() if k not in ("prompt_ids", "assistant_model", "do_sample", "temperature")}
        return {**kept, "temperature": tuple(recovery.retry_temperatures(self.request.options.temperature)),
                "compression_ratio_threshold": COMPRESSION_RATIO_THRESHOLD, "condition_on_prev_tokens": False}


def _attempts(asked: str, kwargs: dict) -> list[tuple[str, tuple[str, dict]]]:
    """A window's tries (window_fallback.py): as asked, then without word times, then greedy; each (what
    it is, (the timestamps it gives, generate's options))."""
    plain = "segment" if asked == "word" else asked
    greedy = {k: v for k, v in kwargs.items() if k not in ("temperature", "compression_ratio_threshold")}
    tries = [("as asked", (asked, kwargs)), ("without word times", (plain, kwargs)),
             ("greedy without word times", (plain, {**greedy, "num_beams": 1, "do_sample": False}))]
    return [(how, attempt) for index, (how, attempt) in enumerate(tries)
            if all(attempt != earlier for _, earlier in tries[:index])]


def _mutable(segments: list[Segment]) -> list[_Segment]:
    return [_Segment(s.start, s.end, s.text, None if s.words is None else [_Word(w.start, w.end, w.text)
                                                                        for w in s.words]) for s in segments]


def _shifted(segments: list[_Segment], offset: float) -> list[_Segment]:
    return [windows.shifted(segment, offset) for segment in segments]


def _final(segments: list[_Segment], language: str | None) -> list[Segment]:
    return [Segment(float(s.start), float(s.end), s.text,
                    None if s.words is None else tuple(Word(float(w.start), float(w.end), w.word) for w in s.words),
                    language=language) for s in segments]
