"""faster-whisper's model and batched pipeline as one request's decoding uses them, and its segments
turned into ours."""

from __future__ import annotations

from faster_whisper import BatchedInferencePipeline, WhisperModel

from whisper_endpoint.asr import cost
from whisper_endpoint.asr.ctranslate2 import encoder_cache
from whisper_endpoint.asr.ctranslate2.alignment import WindowByWindowAlignment
from whisper_endpoint.asr.ctranslate2.encoding import EncoderInPieces
from whisper_endpoint.core.types import Segment, Word


class CountingModel(WindowByWindowAlignment, EncoderInPieces, WhisperModel):
    """faster-whisper's model, counting every encoder window (language detection, batches, seeks), its
    word alignment window by window and its encoder a few windows at a time on CPU (alignment.py,
    encoding.py)."""

    def encode(self, features):
        return encoder_cache.encode(features, self._encode_counted)

    def encode_kept(self, features):
        """``encode``, keeping the output for the decoding of the same window (encoder_cache.py)."""
        return encoder_cache.encode(features, self._encode_counted, keep=True)

    def _encode_counted(self, features):
        cost.count(1 if features.ndim == 2 else features.shape[0])
        return super().encode(features)


class RequestPipeline(BatchedInferencePipeline):
    """faster-whisper's batched pipeline, one per request, decoding that request's batches one call
    at a time.

    The pipeline keeps the last word's end time on itself between batches (word timestamps) and
    resets it when a call's generator ends: a shared pipeline mixed word times across concurrent
    requests, and a call per batch would start each batch from 0. This one carries it from one call
    to the next, as between the batches of one call.
    """

    carried = 0.0

    def forward(self, *args, **kwargs):
        self.last_speech_timestamp = self.carried
        output = super().forward(*args, **kwargs)
        self.carried = self.last_speech_timestamp
        return output


def consume(generator) -> tuple[list, bool]:
    """Run a faster-whisper generator (it decodes as it is read) until it ends or the window budget is
    spent: the segments decoded, and whether it was stopped."""
    segments = []
    try:
        for segment in generator:
            segments.append(segment)
    except cost.BudgetSpent:
        return segments, True
    return segments, False


def as_segment(segment, language: str | None = None) -> Segment:
    words = None
    if segment.words is not None:
        # faster-whisper gives numpy floats in places; the response needs plain JSON numbers.
        words = tuple(Word(float(w.start), float(w.end), w.word, _number(w.probability)) for w in segment.words)
    return Segment(float(segment.start), float(segment.end), segment.text, words,
                   avg_logprob=_number(segment.avg_logprob), no_speech_prob=_number(segment.no_speech_prob),
                   compression_ratio=_number(segment.compression_ratio), temperature=_number(segment.temperature),
                   language=language)


def _number(value) -> float | None:
    return None if value is None else float(value)
