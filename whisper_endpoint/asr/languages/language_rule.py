"""Which language each span of speech is decoded in, from each span's own detection (issue 58).

A span's detection alone flip-flops: a 1 s "What?" or a Czech line is often given to a neighbouring
language (Czech to Slovak or Polish; see docs/languages.md). The rule:

1. The main language has the most probability mass, weighted by duration, over the windows' own
   detections (Whisper's, over a whole window: sure on short speech where a span alone is not).
2. Another language is present only when spans it wins with probability at least ``CONFIDENT`` last
   ``MIN_CONFIDENT_S`` in all and ``MIN_SHARE`` of the speech: one language is the usual case, and then
   every span is decoded in it, as before (single-language audio is decoded as it always was).
3. With several present, each span's probabilities are renormalised over the present languages and it
   takes the most likely; a span that is short (under ``SHORT_S``) or unsure (under ``UNSURE``) takes
   its neighbours' language when the sure spans before and after it agree.

With the spans' voices known (pipeline/span_voices.py: asked for only when ``may_be_mixed``), a voice
is a better witness than a span: each voice's languages are Whisper's detection over that voice's
speech packed into one window (voice_languages.py; without it, the geometric mean of its spans'
detections, weighted by duration), a language is present when voices speaking it say ``MIN_SHARE`` of
the speech and ``MIN_CONFIDENT_S``, and each span takes the present language most likely given its own
detection times its voice's to the power ``VOICE_PRIOR`` (a voice keeps its language unless a span is
much surer of another one). With one voice only, rules 1-3 decide.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from whisper_endpoint.asr.languages.span_languages import SpanLanguage

CONFIDENT, MIN_CONFIDENT_S, MIN_SHARE = 0.8, 2.0, 0.1
SHORT_S, UNSURE = 1.0, 0.6
VOICE_PRIOR = 3.0
MIXED_EVIDENCE = 0.07
_FLOOR = 1e-4  # a language a span's detection rules out still counts a little in its voice's mean


def main_language(spans: list[SpanLanguage]) -> tuple[str, float]:
    """The language with the most duration-weighted probability, and its share of that mass."""
    mass = _mass(spans, lambda span: span.probabilities)
    main = max(mass, key=mass.get)
    return main, mass[main] / (sum(mass.values()) or 1.0)


def present(spans: list[SpanLanguage], windows: list[SpanLanguage]) -> list[str]:
    """The main language first, then every other language the spans clearly speak (rule 2)."""
    main, _ = main_language(windows)
    total = sum(span.duration for span in spans)
    sure = defaultdict(float)
    for span in spans:
        if span.confidence >= CONFIDENT:
            sure[span.language] += span.duration
    others = [code for code, seconds in sorted(sure.items(), key=lambda item: -item[1])
              if code != main and seconds >= MIN_CONFIDENT_S and seconds >= MIN_SHARE * total]
    return [main, *others]


def may_be_mixed(spans: list[SpanLanguage], windows: list[SpanLanguage]) -> bool:
    """Whether a language other than the main one wins spans whose seconds times their confidence make
    ``MIXED_EVIDENCE`` of the speech (and last ``MIN_CONFIDENT_S``): then the voices are worth their cost.
    Single-language speech scatters its unsure spans over many languages, none of them reaching it."""
    main, _ = main_language(windows)
    total = sum(span.duration for span in spans)
    weighted, seconds = defaultdict(float), defaultdict(float)
    for span in spans:
        if span.language != main:
            weighted[span.language] += span.duration * span.confidence
            seconds[span.language] += span.duration
    return any(weighted[code] >= MIXED_EVIDENCE * total and seconds[code] >= MIN_CONFIDENT_S for code in weighted)


def decide(spans: list[SpanLanguage], windows: list[SpanLanguage], voices: list[int] | None = None,
           heard=None) -> list[str]:
    """One language per span (rules 1-3), with each span's voice label when known; ``heard(indices)``
    gives the languages of the voice that said those spans, or None (voice_languages.py)."""
    if not spans:
        return []
    if voices is not None and len(set(voices)) > 1:  # one voice pools nothing the window does not already say
        return _by_voice(spans, voices, heard)
    languages = present(spans, windows)
    if len(languages) == 1:
        return languages * len(spans)
    restricted = [_renormalised(span, languages) for span in spans]
    chosen = [max(p, key=p.get) for p in restricted]
    sure = [span.duration >= SHORT_S and p[c] >= UNSURE for span, p, c in zip(spans, restricted, chosen)]
    return _follow_neighbours(chosen, sure)


def _by_voice(spans: list[SpanLanguage], voices: list[int], heard=None) -> list[str]:
    seconds = np.array([max(span.duration, 1e-3) for span in spans])
    labels = np.asarray(voices)
    by_speech = sorted(set(voices), key=lambda voice: -seconds[labels == voice].sum())  # who is asked first
    detected = {voice: heard(list(np.flatnonzero(labels == voice))) if heard else None for voice in by_speech}
    codes = sorted({code for span in spans for code in span.probabilities}
                   | {code for found in detected.values() if found for code in found})
    p = np.array([[span.probabilities.get(code, 0.0) for code in codes] for span in spans]) + _FLOOR
    p /= p.sum(axis=1, keepdims=True)
    prior = np.empty_like(p)
    for voice, found in detected.items():
        mine = labels == voice
        if found:
            pooled = np.array([found.get(code, 0.0) for code in codes]) + _FLOOR
        else:
            pooled = np.exp((np.log(p[mine]) * seconds[mine, None]).sum(axis=0) / seconds[mine].sum())
        prior[mine] = pooled / pooled.max()  # the voice's languages, the likeliest at 1
    spoken = defaultdict(float)
    for index, seconds_of in zip(prior.argmax(axis=1), seconds):
        spoken[index] += seconds_of
    present = [index for index, said in spoken.items()
               if said >= MIN_CONFIDENT_S and said >= MIN_SHARE * seconds.sum()] or [max(spoken, key=spoken.get)]
    posterior = p[:, present] * prior[:, present] ** VOICE_PRIOR
    return [codes[present[best]] for best in posterior.argmax(axis=1)]


def _follow_neighbours(chosen: list[str], sure: list[bool]) -> list[str]:
    result = list(chosen)
    for i, is_sure in enumerate(sure):
        if is_sure:
            continue
        before = next((chosen[j] for j in range(i - 1, -1, -1) if sure[j]), None)
        after = next((chosen[j] for j in range(i + 1, len(chosen)) if sure[j]), None)
        if before is not None and before == after:
            result[i] = before
    return result


def _renormalised(span: SpanLanguage, languages: list[str]) -> dict[str, float]:
    p = {code: span.probabilities.get(code, 0.0) for code in languages}
    total = sum(p.values())
    return {code: value / total for code, value in p.items()} if total > 0 else {languages[0]: 1.0}


def _mass(spans, probabilities) -> dict[str, float]:
    mass = defaultdict(float)
    for span in spans:
        for code, value in probabilities(span).items():
            mass[code] += value * max(span.duration, 1e-3)
    return mass
