"""A request's speech split into parts of one language each, when its language is not given (issue 58).

The plan is made from the windows the decoding would use anyway (span_languages.py, no second encoder
pass) and language_rule.py's rule. One language (the usual case): one part, the windows unchanged,
their encoder output reused. Several: each language's spans are packed into windows of their own
(as windows.py packs speech), decoded in that language, and the parts' segments merged in time order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from whisper_endpoint.backends import language_rule, span_languages, windows
from whisper_endpoint.core.types import SAMPLE_RATE


@dataclass(frozen=True)
class LanguagePlan:
    language: str  # the main language: the response's top-level one
    probability: float | None  # its share of the detection's mass (None: not detected)
    parts: list[tuple[str, windows.PackedSpeech]]  # (language, its speech packed into windows)

    @property
    def mixed(self) -> bool:
        return len(self.parts) > 1


def given(language: str, packed: windows.PackedSpeech) -> LanguagePlan:
    return LanguagePlan(language, None, [(language, packed)])


def plan(model, samples: np.ndarray, packed: windows.PackedSpeech, window_s: float,
         allowed: list[str] | None) -> LanguagePlan:
    """Detect each VAD span's language in ``packed``'s windows and split the speech by language."""
    starts = np.cumsum([0] + [s["end"] - s["start"] for s in packed.speech]) / SAMPLE_RATE
    spans = [(float(a), float(b)) for a, b in zip(starts[:-1], starts[1:])]  # in packed time
    found, whole = [], []
    for window in packed.windows:
        inside = [spans[i] for i, (a, b) in enumerate(spans) if window.start <= (a + b) / 2 < window.end]
        features = span_languages.window_features(model, packed.audio, window.start, window.end)
        detected_window, detected = span_languages.detect(model, features, window.start, inside, allowed)
        found += detected
        whole.append(detected_window)
    return _split(samples, packed, window_s, found, whole, [packed.speech[i] for i in _indices(spans, found)])


def plan_one_window(model, samples: np.ndarray, speech: list[dict], window_s: float,
                    allowed: list[str] | None) -> LanguagePlan:
    """The same for audio that fits one window (the sequential path): its spans in its own time."""
    duration = len(samples) / SAMPLE_RATE
    features = span_languages.window_features(model, samples, 0.0, duration)
    spans = [(s["start"] / SAMPLE_RATE, s["end"] / SAMPLE_RATE) for s in speech]
    window, found = span_languages.detect(model, features, 0.0, spans, allowed)
    whole = windows.PackedSpeech(samples, [windows.Window(0.0, duration)], speech)
    return _split(samples, whole, window_s, found, [window], [speech[spans.index((s.start, s.end))] for s in found])


def _split(samples, packed, window_s, found, whole, speech) -> LanguagePlan:
    main, share = language_rule.main_language(whole)
    if not found:  # no span long enough to detect on: the windows' language
        return LanguagePlan(main, share, [(main, packed)])
    chosen = language_rule.decide(found, whole)
    if len(set(chosen)) == 1:
        return LanguagePlan(chosen[0], share, [(chosen[0], packed)])
    by_language = defaultdict(list)
    for span, language in zip(speech, chosen):
        by_language[language].append(span)
    seconds = {code: sum(s["end"] - s["start"] for s in spans) for code, spans in by_language.items()}
    main = max(seconds, key=seconds.get)
    parts = [(code, pack_spans(samples, spans, window_s)) for code, spans in by_language.items()]
    return LanguagePlan(main, share, parts)


def pack_spans(samples: np.ndarray, speech: list[dict], window_s: float) -> windows.PackedSpeech:
    """Given spans of speech (in samples), packed into windows as windows.pack_speech packs the VAD's."""
    from faster_whisper.vad import collect_chunks

    chunks, metadata = collect_chunks(samples, speech, max_duration=window_s)
    found = [windows.Window(m["offset"], m["offset"] + m["duration"]) for m in metadata if m["duration"] > 0]
    return windows.PackedSpeech(np.concatenate(chunks), found, speech)


def _indices(spans, found) -> list[int]:
    where = {span: i for i, span in enumerate(spans)}
    return [where[(s.start, s.end)] for s in found]
