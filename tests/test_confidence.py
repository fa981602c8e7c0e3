"""Whisper's confidence in the response (``return_confidence``) on both backends, and the decoding options
(temperature, hotwords, condition_on_previous_text, no_speech_threshold) where a path cannot apply them."""

from __future__ import annotations

import numpy as np
import pytest

from support.audio import decode_reference, read_clip
from support.paths import CLIPS
from support.serving import CLIP, TEXT
from whisper_endpoint.asr import decoding_options
from whisper_endpoint.core.types import Segment

FIELDS = {"avg_logprob", "no_speech_prob", "compression_ratio", "temperature"}


def _ask(handler, **parameters) -> dict:
    return handler({"inputs": read_clip(CLIP), "parameters": parameters})


@pytest.fixture(scope="module")
def tiny_tf(settings_factory):
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=settings_factory(asr_model="embedded:tiny.en", asr_backend="transformers"))


def test_ctranslate2_words_and_segments_carry_their_confidence(tiny_handler):
    result = _ask(tiny_handler, return_timestamps="word", return_confidence=True)
    assert "".join(c["text"] for c in result["chunks"]).strip() == TEXT
    assert all(0.5 < chunk["probability"] <= 1 for chunk in result["chunks"])
    [segment] = result["segments"]  # the chunks are words: the segments come beside them
    assert set(segment) == {"text", "timestamp", "language"} | FIELDS
    assert -1 < segment["avg_logprob"] < 0 and segment["no_speech_prob"] < 0.1 and segment["temperature"] == 0
    plain = _ask(tiny_handler, return_timestamps="word")  # not asked: the response is as before
    assert "segments" not in plain and all(set(c) == {"text", "timestamp", "language"} for c in plain["chunks"])


@pytest.mark.slow  # both backends on the clips
def test_transformers_scores_its_transcript_like_ctranslate2(tiny_handler, tiny_tf):
    ours = _ask(tiny_tf, return_timestamps="word", return_confidence=True)
    reference = _ask(tiny_handler, return_timestamps="word", return_confidence=True)
    assert [c["text"] for c in ours["chunks"]] == [c["text"] for c in reference["chunks"]]
    # The same weights, teacher-forced without timestamp tokens: close to faster-whisper's word probabilities.
    for mine, theirs in zip(ours["chunks"], reference["chunks"]):
        assert mine["probability"] == pytest.approx(theirs["probability"], abs=0.15)
    [segment] = ours["segments"]
    assert -1 < segment["avg_logprob"] < 0 and segment["no_speech_prob"] < 0.1
    assert segment["compression_ratio"] == reference["segments"][0]["compression_ratio"]
    assert segment["temperature"] == 0 and ours["decoding"]["confidence_windows"] == 1


@pytest.mark.parametrize("backend", ["ctranslate2", "transformers"])
def test_hotwords_bring_a_missed_word(backend, tiny_handler, tiny_tf):
    # tiny.en hears "color number" here (scripts/evaluate_confidence.py); the name given, it writes it.
    handler = tiny_handler if backend == "ctranslate2" else tiny_tf
    result = handler({"inputs": read_clip("asterisk_queue-thereare.flac"), "parameters": {
        "hotwords": "caller", "no_speech_threshold": 0.3, "condition_on_previous_text": False}})
    assert "caller number" in result["text"].lower()
    if backend == "transformers":  # as a prompt; no_speech_threshold on its scored window
        assert result["decoding"]["confidence_windows"] == 1


@pytest.mark.slow  # long audio sampled
def test_the_batched_path_samples_at_the_temperature_asked_and_warns_what_it_cannot_do(tiny_handler):
    gap = np.zeros(16000, np.float32)
    names = ["asterisk_conf-adminmenu-162.flac", "asterisk_vm-next.flac"]
    samples = np.concatenate([part for name in names for part in (decode_reference(CLIPS / name), gap)])
    result = tiny_handler({"inputs": {"array": samples.tolist(), "sampling_rate": 16000}, "parameters": {
        "chunk_length_s": 15, "temperature": 0.5, "condition_on_previous_text": True, "return_confidence": True}})
    assert result["decoding"]["mode"] == "batched" and result["chunks"]
    assert {chunk["temperature"] for chunk in result["chunks"]} == {0.5}
    assert any(w.startswith("condition_on_previous_text applies") for w in result["warnings"])


def test_no_speech_rule():
    silent = Segment(0, 1, " you", no_speech_prob=0.8, avg_logprob=-1.5)
    assert not decoding_options.keep(silent, 0.5) and decoding_options.keep(silent, 0.9)
    assert decoding_options.keep(Segment(0, 1, " yes", no_speech_prob=0.8, avg_logprob=-0.2), 0.5)
