"""Word timestamps aligned window by window on CPU (asr/ctranslate2/alignment.py, issue #36) are faster-whisper's
own batched alignment: the same words, times and text, the probabilities within int8 rounding, on a real
batch."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from faster_whisper import WhisperModel

from support.audio import decode_reference
from whisper_endpoint.core.config import InferenceConfig

DIALOGUE = Path(__file__).resolve().parents[1] / "audio" / "dialogues" / "fillets_cave.flac"  # 76 s: batched


@pytest.fixture(scope="module")
def asr(base_handler):
    return base_handler.asr


def _word_transcript(asr, samples):
    # Without the second pass over windows' remainders: one that falls back to a temperature above 0 is
    # sampled anew on every run (either alignment), and it is aligned alone, as before.
    options = InferenceConfig(language="nl", return_timestamps="word", batch_size=24, recover_dropped_speech=False)
    return asr.transcribe(samples, options)


def test_window_by_window_alignment_gives_the_batched_alignment(asr, monkeypatch):
    samples = decode_reference(DIALOGUE)
    batches = []
    batched = functools.partial(WhisperModel.find_alignment, asr.model)

    def faster_whispers_own(tokenizer, text_tokens, *args, **kwargs):
        batches.append(len(text_tokens))
        return batched(tokenizer, text_tokens, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(asr.model, "find_alignment", faster_whispers_own)
        expected = _word_transcript(asr, samples)
    assert max(batches) >= 2, batches  # a batch of several windows was aligned, or this tests nothing
    got = _word_transcript(asr, samples)
    # The same text, times and words; the probabilities from int8 kernels that round a batch and one
    # window alike on AVX-512 CPUs, and up to ~0.07 apart on AVX2 ones.
    assert len(got.segments) == len(expected.segments)
    for mine, theirs in zip(got.segments, expected.segments):
        assert (mine.start, mine.end, mine.text) == (theirs.start, theirs.end, theirs.text)
        assert [(w.start, w.end, w.text) for w in mine.words] == [(w.start, w.end, w.text) for w in theirs.words]
        assert [w.probability for w in mine.words] == pytest.approx([w.probability for w in theirs.words], abs=0.1)
        assert mine.avg_logprob == theirs.avg_logprob  # the decoding's, not the alignment's
    assert sum(len(segment.words) for segment in got.segments) > 50
