"""Which language each stretch of a request's speech is decoded in, when its language is not given (issue 58).

The plan is made on the windows the decoding uses anyway (span_languages.py: no second encoder pass)
with language_rule.py's rule. One language (the usual case): every window is decoded in it, as before.
Several: a window whose spans are in one language is decoded in it; a window with spans in several is
decoded once per language on the same encoder output (the decoder runs again, the encoder does not),
each decode keeping the words over its own language's spans (``own_language``): every turn is decoded
in its language with the whole window around it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from whisper_endpoint.backends import language_rule, span_languages, voice_language_check, windows
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

    def languages_in(self, window: windows.Window) -> list[str]:
        """The languages of the spans whose middle lies in ``window``, in order of appearance."""
        if self.spans is None:
            return [self.language]
        found = [code for start, end, code in self.spans if window.start <= (start + end) / 2 < window.end]
        return list(dict.fromkeys(found)) or [self.language]

    def spans_of(self, language: str) -> list[tuple[float, float]]:
        return [(start, end) for start, end, code in self.spans or () if code == language]


def given(language: str, packed: windows.PackedSpeech) -> LanguagePlan:
    return LanguagePlan(language, None, packed)


def plan(model, packed: windows.PackedSpeech, allowed: list[str] | None, voices: Voices | None = None) -> LanguagePlan:
    """Detect each VAD span's language in ``packed``'s windows (their encoder output is kept for the decoding);
    ``voices`` groups the spans by speaker when they may be in several languages (language_rule.py)."""
    spans = packed.spans()
    found, whole = [], []
    for window in packed.windows:
        inside = [span for span in spans if window.start <= (span[0] + span[1]) / 2 < window.end]
        features = span_languages.window_features(model, packed.audio, window.start, window.end)
        detected_window, detected = span_languages.detect(model, features, window.start, inside, allowed)
        found += detected
        whole.append(detected_window)
    return _decided(model, packed, found, whole, voices)


def plan_one_window(model, samples: np.ndarray, window_s: float, allowed: list[str] | None) -> LanguagePlan:
    """The same for audio that fits one window (the sequential path): detected on the window that path
    encodes (the whole clip); when several languages are spoken, ``packed`` is its packed speech, to be
    decoded as the batched path does. Without the voices: a clip's window sees all of it, and a short
    request keeps the cost it has with its language given."""
    packed = windows.pack_speech(samples, window_s)  # as the batched path finds them: a span a turn
    duration = len(samples) / SAMPLE_RATE
    own = [(s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE) for s in packed.speech]
    features = span_languages.window_features(model, samples, 0.0, duration)
    window, found = span_languages.detect(model, features, 0.0, own, allowed)
    moved = dict(zip(own, packed.spans()))  # clip time -> packed time
    found = [replace(span, start=moved[(span.start, span.end)][0], end=moved[(span.start, span.end)][1])
             for span in found]
    return _decided(model, packed, found, [window], None)


def _decided(model, packed, found, whole, voices: Voices | None) -> LanguagePlan:
    main, share = language_rule.main_language(whole)
    times = [(span.start, span.end) for span in found]
    labels = voices(packed.audio, times) if voices is not None and language_rule.may_be_mixed(found, whole) else None
    check = voice_language_check.checker(model, packed.audio, times)
    chosen = language_rule.decide(found, whole, labels, check)
    if len(set(chosen)) <= 1:
        return LanguagePlan(chosen[0] if chosen else main, share, packed)
    spans = [(span.start, span.end, code) for span, code in zip(found, chosen)]
    seconds = {code: sum(e - s for s, e, c in spans if c == code) for code in set(chosen)}
    return LanguagePlan(max(seconds, key=seconds.get), share, packed, spans)


def own_language(segments: list, spans: list[tuple[float, float]], with_words: bool) -> list:
    """faster-whisper segments (packed time, with words) cut to their words over ``spans``: one segment per
    span and decoded segment (a segment's words elsewhere were decoded in the wrong language)."""
    kept = []
    for segment in segments:
        groups: dict[int, list] = {}
        for word in segment.words or ():
            middle = (word.start + word.end) / 2
            index = next((i for i, (start, end) in enumerate(spans) if start <= middle < end), None)
            if index is not None:
                groups.setdefault(index, []).append(word)
        for words in groups.values():
            kept.append(replace(segment, start=words[0].start, end=words[-1].end,
                                text="".join(word.word for word in words), words=words if with_words else None))
    return kept
