"""Conversations in more than one language (issue 58): ``languages``, a language per segment, the summary."""

from __future__ import annotations

import json

import pytest

from support.audio import decode_reference, pcm16_wav, read_clip
from support.paths import AUDIO
from support.serving import CLIP
from whisper_endpoint.asr.languages import language_rule
from whisper_endpoint.asr.languages.span_languages import SpanLanguage
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.errors import InvalidParameterError, UnsupportedOptionError


def test_an_unknown_language_is_a_422_naming_it(tiny_handler):
    with pytest.raises(InvalidParameterError, match="parameters.languages.*'xx'") as info:
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"languages": ["nl", "xx"]}})
    assert info.value.status == 422


def test_an_english_only_model_refuses_other_allowed_languages(tiny_handler):
    with pytest.raises(UnsupportedOptionError, match=r"\['nl'\].*English-only") as info:
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"languages": "en,nl"}})
    assert info.value.status == 400


def test_one_allowed_language_is_the_language():
    assert InferenceConfig(languages=["Dutch"]).language == "nl"
    assert InferenceConfig(languages='["nl", "en"]').languages == ["nl", "en"]
    with pytest.raises(ValueError, match="not among languages"):
        InferenceConfig(language="cs", languages=["nl", "en"])


def test_every_chunk_says_its_language_and_the_summary_its_share(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP), "parameters": {}})
    assert result["chunks"] and {chunk["language"] for chunk in result["chunks"]} == {"en"}
    assert result["languages"] == [{"language": "en", "share": 1.0}]


def _span(start, end, **probabilities):
    return SpanLanguage(start, end, probabilities)


def test_one_language_stays_one_language():
    # A short unsure span in another language does not make a second language (single-language audio
    # is decoded as before).
    spans = [_span(0, 3, en=0.9, nl=0.1), _span(3, 4, en=0.3, hu=0.7), _span(4, 9, en=0.95, nl=0.05)]
    assert language_rule.decide(spans, [_span(0, 9, en=0.9, hu=0.1)]) == ["en", "en", "en"]
    # Unsure spans scattered over other languages are no reason to look at the voices (their cost).
    scattered = [_span(0, 10, en=0.9, nl=0.1), _span(10, 12, en=0.4, cy=0.6), _span(12, 14, en=0.45, af=0.55),
                 _span(14, 30, en=0.95, nl=0.05)]
    assert not language_rule.may_be_mixed(scattered, [_span(0, 30, en=0.9, cy=0.1)])


def test_a_clear_second_language_is_decoded_in_its_own_and_unsure_spans_follow_neighbours():
    spans = [_span(0, 3, nl=0.9, en=0.1), _span(3, 3.5, nl=0.2, en=0.8), _span(3.5, 6, nl=0.95, en=0.05),
             _span(6, 9, en=0.9, nl=0.1)]
    windows = [_span(0, 9, nl=0.6, en=0.4)]
    assert language_rule.decide(spans, windows) == ["nl", "nl", "nl", "en"]


def test_a_voice_keeps_its_language_where_its_spans_alone_waver():
    # A Czech speaker's lines, each alone, lean to Polish, Slovak or even English; pooled over the voice,
    # Czech wins (no line puts it lower than second), and the English speaker stays English.
    czech = [_span(0, 3, cs=0.35, pl=0.45, en=0.2), _span(6, 9, cs=0.5, sk=0.4, en=0.1),
             _span(12, 15, cs=0.3, pl=0.3, en=0.4)]
    english = [_span(3, 6, en=0.9, cs=0.1), _span(9, 12, en=0.85, pl=0.15)]
    spans = sorted(czech + english, key=lambda span: span.start)
    voices = [1, 2, 1, 2, 1]
    windows = [_span(0, 15, en=0.5, cs=0.3, pl=0.2)]
    assert language_rule.decide(spans, windows, voices) == ["cs", "en", "cs", "en", "cs"]
    assert language_rule.may_be_mixed(spans, windows)


def test_one_voice_is_decided_by_the_rule_of_the_spans():
    # A single speaker's short spans lean to Japanese where the whole window says English: one voice pools
    # nothing the window does not already say, so rules 1-3 decide (no span is sure enough for a second language).
    spans = [_span(0, 1.5, ja=0.55, en=0.45), _span(1.5, 3, ja=0.6, en=0.4), _span(3, 4, en=0.7, ja=0.3)]
    assert language_rule.decide(spans, [_span(0, 4, en=0.8, ja=0.2)], [1, 1, 1]) == ["en", "en", "en"]


def test_a_voice_takes_the_languages_heard_over_its_own_speech():
    # Pooled over its spans, the first voice is Polish; Whisper's detection over all of its speech in one
    # window (here, its verdict) says Czech, and that holds for every span of the voice. Each voice is asked
    # once, the one that speaks longest first; a voice not heard (the bound) pools its spans.
    spans = [_span(0, 3, pl=0.45, cs=0.4, en=0.15), _span(3, 5, en=0.95, pl=0.05),
             _span(6, 9, pl=0.5, cs=0.45, en=0.05)]
    asked = []

    def heard(indices):
        asked.append(list(indices))
        return {"cs": 0.9, "pl": 0.1} if len(asked) == 1 else None

    assert language_rule.decide(spans, [_span(0, 9, en=0.5, pl=0.5)], [1, 2, 1], heard) == ["cs", "en", "cs"]
    assert asked == [[0, 2], [1]]


def test_a_czech_voice_is_heard_as_czech_over_its_own_speech(base_handler):
    # The Czech speaker of mixed_nl_cs_wreck, whose lines Whisper's language token takes for Polish or
    # Slovak one by one (docs/languages.md): over the voice's speech in one window it is Czech. The
    # window costs one encoder pass, added to the request's bound; past ``most`` voices none is heard.
    from whisper_endpoint.asr import cost
    from whisper_endpoint.asr.ctranslate2.language_detection import LanguageDetector
    from whisper_endpoint.asr.languages import voice_languages

    path = AUDIO / "mixed" / "mixed_nl_cs_wreck.flac"
    turns = json.loads(path.with_suffix(".json").read_text())["turns"]
    spans = [(turn["start"], turn["end"]) for turn in turns]
    czech = [i for i, turn in enumerate(turns) if turn["language"] == "cs"]
    with cost.counting(75) as counter:
        budget = counter.budget
        hear = LanguageDetector(base_handler.asr.model, None).voice
        heard = voice_languages.detector(hear, decode_reference(path), spans, most=1)
        languages = heard(czech)
        assert heard([i for i in range(len(turns)) if i not in czech]) is None
        assert counter.used == 1 and counter.budget == budget + 1
    assert max(languages, key=languages.get) == "cs", sorted(languages.items(), key=lambda kv: -kv[1])[:3]


def test_voices_tell_two_speakers_apart():
    # CAM++ on the reference turns of a Dutch actor and an English flite voice: two voices, each turn
    # with its own speaker's label.
    from whisper_endpoint.pipeline.span_voices import SpanVoices

    reference = json.loads((AUDIO / "mixed" / "mixed_nl_en_chest.json").read_text())["turns"][:8]
    samples = decode_reference(AUDIO / "mixed" / "mixed_nl_en_chest.flac")
    labels = SpanVoices()(samples, [(turn["start"], turn["end"]) for turn in reference])
    by_speaker = {}
    for turn, label in zip(reference, labels):
        by_speaker.setdefault(turn["speaker"], set()).add(label)
    assert len(by_speaker) == 2 and all(len(found) == 1 for found in by_speaker.values()), by_speaker
    assert len(set(labels)) == 2


def test_a_group_of_too_little_speech_joins_the_nearest_voice():
    # Two voices of 6 s each and a 1.4 s line whose embedding sits apart from both (a short line is a
    # weak witness of a voice): it joins the voice it is nearer to, not a voice of its own.
    import numpy as np

    from whisper_endpoint.pipeline.span_voices import labels

    a, b = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    short = np.array([0.1, 0.5, 1.0])  # cosine distance over 0.5 from both voices (0.91, 0.55), nearer to b
    found = labels(np.stack([a, b, a, short, b]), [3.0, 3.0, 3.0, 1.4, 3.0])
    assert found[3] == found[1] == found[4] and found[0] == found[2] != found[1]
    alone = labels(np.stack([a, short]), [1.0, 1.4])  # no voice has enough speech: the groups stay
    assert alone[0] != alone[1]


def test_a_span_at_the_very_end_of_the_audio_still_gets_a_voice():
    import numpy as np

    from whisper_endpoint.pipeline.span_voices import SpanVoices

    noise = np.random.default_rng(0).normal(0, 0.1, 3 * 16000).astype(np.float32)
    assert len(SpanVoices()(noise, [(0.0, 1.5), (1.5, 2.99), (2.999, 3.0)])) == 3


@pytest.fixture(scope="module")
def mixed_excerpt() -> bytes:
    """The first 20.4 s of a Dutch-English conversation: four Dutch turns, a one-word English one, two
    English turns (audio/mixed/mixed_nl_en_chest.json)."""
    samples = decode_reference(AUDIO / "mixed" / "mixed_nl_en_chest.flac")
    return pcm16_wav(samples[: int(20.42 * 16000)])


@pytest.mark.parametrize("engine", ["base_handler", "base_tf"], ids=["ctranslate2", "transformers"])
def test_each_segment_is_decoded_in_its_own_language(engine, mixed_excerpt, request):
    result = request.getfixturevalue(engine)({"inputs": mixed_excerpt, "parameters": {}})
    said = {round(chunk["timestamp"][0]): chunk["language"] for chunk in result["chunks"]}
    assert said[0] == "nl" and said[13] == "en", said
    english = " ".join(chunk["text"] for chunk in result["chunks"] if chunk["language"] == "en").lower()
    assert "too easy" in english and "player" in english
    assert [entry["language"] for entry in result["languages"]] == ["nl", "en"]
    assert sum(entry["share"] for entry in result["languages"]) == pytest.approx(1.0, abs=0.002)
    assert result["language"] == "nl"


@pytest.mark.parametrize("engine", ["base_handler", "base_tf"], ids=["ctranslate2", "transformers"])
def test_detection_costs_no_second_encoder_pass(engine, request):
    result = request.getfixturevalue(engine)({"inputs": read_clip(CLIP), "parameters": {}})
    assert result["language"] == "en" and result["decoding"]["encoder_windows"] == 1


def test_a_window_is_encoded_once_per_request():
    # Detection keeps a window's encoder output; the decoding takes it once, or it is forgotten when its
    # window is cut in pieces; another request starts empty.
    import numpy as np

    from whisper_endpoint.asr import encoder_outputs
    from whisper_endpoint.asr.ctranslate2 import encoder_cache

    calls = []

    def encoder(features):
        calls.append(len(features))
        return np.ones((len(features), 3, 2), dtype=np.float32)

    window, other = np.zeros((1, 4, 6), dtype=np.float32), np.ones((1, 4, 6), dtype=np.float32)
    with encoder_outputs.active():
        encoder_cache.encode(np.concatenate([window, other]), encoder, keep=True)
        encoder_cache.encode(window, encoder)
        assert calls == [2]
        encoder_cache.encode(window, encoder)  # taken once: dropped
        assert calls == [2, 1]
        encoder_outputs.forget(other[0])
        encoder_cache.encode(other, encoder)
        assert calls == [2, 1, 1]
    with encoder_outputs.active():
        encoder_cache.encode(window, encoder)
    assert calls == [2, 1, 1, 1]


def _plan(spans):
    import numpy as np

    from whisper_endpoint.asr.languages import language_parts
    from whisper_endpoint.asr.long_form import windows

    packed = windows.PackedSpeech(np.zeros(0, np.float32), [windows.Window(0.0, 30.0), windows.Window(30.0, 50.0)],
                                  [])
    return language_parts.LanguagePlan("nl", None, packed, spans)


def _cut(spans, most=99):
    from whisper_endpoint.asr.languages import language_parts

    plan, cut = language_parts.one_language_each(_plan(spans), most)
    return [(w.start, w.end, plan.language_of(w)) for w in plan.packed.windows], [(w.start, w.end) for w in cut]


def test_a_window_in_several_languages_is_cut_where_the_language_changes():
    spans = [(0.0, 8.0, "nl"), (8.0, 12.0, "nl"), (12.0, 20.0, "en"), (20.0, 30.0, "nl"),
             (30.0, 40.0, "cs"), (40.0, 50.0, "cs")]
    assert _cut(spans) == ([(0.0, 12.0, "nl"), (12.0, 20.0, "en"), (20.0, 30.0, "nl"), (30.0, 50.0, "cs")],
                           [(0.0, 30.0)])


def test_cut_windows_are_bounded_the_shortest_piece_joining_a_neighbour():
    spans = [(0.0, 8.0, "nl"), (8.0, 9.0, "en"), (9.0, 20.0, "nl"), (20.0, 30.0, "en"), (30.0, 50.0, "cs")]
    assert _cut(spans, most=4)[0] == [(0.0, 9.0, "nl"), (9.0, 20.0, "nl"), (20.0, 30.0, "en"), (30.0, 50.0, "cs")]
    assert _cut(spans, most=2)[0] == [(0.0, 30.0, "nl"), (30.0, 50.0, "cs")]


def test_one_language_is_not_cut():
    assert _cut(None) == ([(0.0, 30.0, "nl"), (30.0, 50.0, "nl")], [])
