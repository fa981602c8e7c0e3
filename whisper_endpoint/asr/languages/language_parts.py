"""Which language each stretch of a request's speech is decoded in, when its language is not given (issue 58).

The plan is made on the windows the decoding uses anyway (span_languages.py: no second encoder pass)
with language_rule.py's rule. One language (the usual case): every window is decoded in it, as before.
Several: a window whose spans are in one language is decoded in it; a window with spans in several is
cut where the language changes (``one_language_each``), so that each turn is decoded in its language
with only its own language's speech around it, as it would be alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from whisper_endpoint.asr import cost
from whisper_endpoint.asr.languages import (
    language_rule,
    span_languages,
    voice_languages,
)
from whisper_endpoint.asr.long_form import windows
from whisper_endpoint.core.types import SAMPLE_RATE

Voices = Callable[[np.ndarray, list[tuple[float, float]]], "list[int] | None"]  # pipeline/span_voices.py


@dataclass(frozen=True)
class LanguagePlan:
    language: str  # the main language: the response's top-level one
    probability: float | None  # its share of the windows' detection (None: not detected)
    packed: windows.PackedSpeech
    spans: list[tuple[float, float, str]] | None = None  # packed time; None: all in ``language``

    @property
    def mixed(self) -> bool:
        return self.spans is not None

    def language_of(self, window: windows.Window) -> str:
        """The language spoken longest in ``window`` (each window has one after ``one_language_each``)."""
        seconds: dict[str, float] = {}
        for start, end, code in self.spans or ():
            if window.holds(start, end):
                seconds[code] = seconds.get(code, 0.0) + end - start
        return max(seconds, key=seconds.get) if seconds else self.language


def one_language_each(plan: LanguagePlan, most: int) -> tuple[LanguagePlan, list[windows.Window]]:
    """``plan`` with each window that holds several languages cut where the language changes (each piece
    within its window, so no longer than it), and the windows that were cut. At most ``most`` windows in
    all (each costs an encoder pass): while over, the shortest piece joins a neighbour of its window, and
    is decoded in the language spoken longest there."""
    if plan.spans is None:
        return plan, []
    pieces, cut = [], []
    for window in plan.packed.windows:
        inside = [(s, e, c) for s, e, c in plan.spans if window.holds(s, e)]
        runs = _runs(inside) if len({code for _, _, code in inside}) > 1 else [window]
        if len(runs) > 1:
            cut.append(window)
        pieces.append(runs)
    while sum(map(len, pieces)) > most and any(len(runs) > 1 for runs in pieces):
        runs, i = min(((runs, i) for runs in pieces if len(runs) > 1 for i in range(len(runs))),
                      key=lambda pair: pair[0][pair[1]].end - pair[0][pair[1]].start)
        j = i - 1 if i == len(runs) - 1 or (i > 0 and _length(runs[i - 1]) < _length(runs[i + 1])) else i + 1
        first, second = sorted((i, j))
        runs[first: second + 1] = [windows.Window(runs[first].start, runs[second].end)]
    cut_windows = [piece for runs in pieces for piece in runs]
    return replace(plan, packed=replace(plan.packed, windows=cut_windows)), cut


def cut_for_decoding(detector: span_languages.Detector, plan: LanguagePlan, duration_s: float) -> LanguagePlan:
    """``one_language_each`` for the decoding: the windows cut add to the request's bound (cost.py), and
    their encoder outputs kept from detection are dropped."""
    most = max(cost.turn_windows(duration_s), len(plan.packed.windows))
    pure, cut = one_language_each(plan, most)
    cost.allow(len(pure.packed.windows) - len(plan.packed.windows))
    for window in cut:
        detector.forget(plan.packed.audio, window.start, window.end)
    return pure


def _runs(spans: list[tuple[float, float, str]]) -> list[windows.Window]:
    """Consecutive spans of one language."""
    found = []
    run_start, run_end, run_code = spans[0]
    for start, end, code in spans[1:]:
        if code != run_code:
            found.append(windows.Window(run_start, run_end))
            run_start, run_code = start, code
        run_end = end
    found.append(windows.Window(run_start, run_end))
    return found


def _length(window: windows.Window) -> float:
    return window.end - window.start


def given(language: str, packed: windows.PackedSpeech) -> LanguagePlan:
    return LanguagePlan(language, None, packed)


def plan(detector: span_languages.Detector, packed: windows.PackedSpeech, voices: Voices | None = None) -> LanguagePlan:
    """Detect each VAD span's language in ``packed``'s windows (their encoder output is kept for the decoding);
    ``voices`` groups the spans by speaker when they may be in several languages, and each voice is
    detected over its own speech (language_rule.py, voice_languages.py: added to the request's bound)."""
    spans = packed.spans()
    found, whole = [], []
    for window in packed.windows:
        inside = [span for span in spans if window.holds(*span)]
        detected_window, detected = detector.window(packed.audio, window.start, window.end, inside)
        found += detected
        whole.append(detected_window)
    return _decided(detector, packed, (found, whole), voices)


def plan_one_window(detector: span_languages.Detector, samples: np.ndarray, window_s: float) -> LanguagePlan:
    """The same for audio that fits one window (the sequential path): detected on the window that path
    encodes (the whole clip); when several languages are spoken, ``packed`` is its packed speech, to be
    decoded as the batched path does. Without the voices: a clip's window sees all of it, and a short
    request keeps the cost it has with its language given."""
    packed = windows.pack_speech(samples, window_s)  # as the batched path finds them: a span a turn
    duration = len(samples) / SAMPLE_RATE
    own = [(s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE) for s in packed.speech]
    window, found = detector.window(samples, 0.0, duration, own)
    moved = dict(zip(own, packed.spans()))  # clip time -> packed time
    found = [replace(span, start=moved[(span.start, span.end)][0], end=moved[(span.start, span.end)][1])
             for span in found]
    return _decided(detector, packed, (found, [window]), None)


def _decided(detector: span_languages.Detector, packed: windows.PackedSpeech,
             detected: tuple[list[span_languages.SpanLanguage], list[span_languages.SpanLanguage]],
             voices: Voices | None) -> LanguagePlan:
    """The plan from what was ``detected``: (each span's languages, each window's)."""
    found, whole = detected
    main, share = language_rule.main_language(whole)
    times = [(span.start, span.end) for span in found]
    labels = voices(packed.audio, times) if voices is not None and language_rule.may_be_mixed(found, whole) else None
    heard = voice_languages.detector(detector.voice, packed.audio, times,
                                     most=cost.voice_windows(len(packed.audio) / SAMPLE_RATE))
    chosen = language_rule.decide(found, whole, labels, heard)
    if len(set(chosen)) <= 1:
        return LanguagePlan(chosen[0] if chosen else main, share, packed)
    spans = [(span.start, span.end, code) for span, code in zip(found, chosen)]
    seconds = {code: sum(e - s for s, e, c in spans if c == code) for code in set(chosen)}
    return LanguagePlan(max(seconds, key=seconds.get), share, packed, spans)
