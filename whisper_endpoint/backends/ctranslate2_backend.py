"""CTranslate2 backend through faster-whisper: int8/float16/float32, much faster than PyTorch on CPU.

Audio that fits one window runs through ``WhisperModel.transcribe`` (sequential, conditioned on
previous text). Longer audio runs through ``BatchedInferencePipeline`` over the speech found by the
bundled Silero VAD, packed into windows (see windows.py), ``batch_size`` windows at once; the response's
``decoding`` block says which path ran. The request's ``DecodeContext`` hears of every batch (and
every segment of the sequential path), and stops the decode there when asked to.

Requests may run on several threads at once: the model is shared (``num_workers`` CTranslate2 workers
decode that many requests in parallel; more requests wait for a free worker), everything a decode
keeps between its steps lives in objects made for that request.
"""

from __future__ import annotations

import logging
import math

import numpy as np
from faster_whisper import BatchedInferencePipeline, WhisperModel

from whisper_endpoint.audio import TARGET_RATE
from whisper_endpoint.backends import decoding_options, windows
from whisper_endpoint.backends.base import check_language_options
from whisper_endpoint.config import InferenceConfig
from whisper_endpoint.decode_context import DecodeContext
from whisper_endpoint.errors import ModelLoadError
from whisper_endpoint.results import Segment, Transcript, Word

logger = logging.getLogger(__name__)


class _RequestPipeline(BatchedInferencePipeline):
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


class CTranslate2Backend:
    name = "ctranslate2"

    def __init__(self, model_path: str, *, model_name: str, device: str, compute_type: str, cpu_threads: int = 0,
                 num_workers: int = 1):
        try:
            self.model = WhisperModel(
                model_path,
                device=device,
                compute_type=compute_type,
                cpu_threads=cpu_threads,
                num_workers=num_workers,
                local_files_only=True,
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelLoadError(f"faster-whisper could not load {model_name!r}: {exc}") from exc
        self.model_name = model_name
        self.device, self.compute_type = device, compute_type
        self.is_multilingual = bool(self.model.model.is_multilingual)
        self.num_workers = num_workers
        logger.info("loaded %s with ctranslate2 on %s (%s, %d workers)", model_name, device, compute_type, num_workers)

    def transcribe(self, samples: np.ndarray, options: InferenceConfig,
                   context: DecodeContext | None = None) -> Transcript:
        check_language_options(options, is_multilingual=self.is_multilingual, model_name=self.model_name)
        context = context or DecodeContext()
        warnings = []
        if options.assisted:
            warnings.append("'assisted' needs the transformers backend with ASSISTANT_MODEL; decoded unassisted")
        kwargs = dict(
            language=options.language,
            task=options.task,
            beam_size=options.beam_size,
            word_timestamps=options.return_timestamps == "word",
            without_timestamps=options.return_timestamps == "none",
            initial_prompt=options.initial_prompt,
            **decoding_options.faster_whisper_kwargs(options),
        )
        if len(samples) > options.chunk_length_s * TARGET_RATE:
            segments, language, probability, recovered = self._batched(samples, options, kwargs, context)
            warnings += decoding_options.batched_warnings(options)
            decoding = {"mode": "batched", "batch_size": options.batch_size, "segmentation": "vad",
                        "remainders_decoded_again": recovered}
        else:
            segments, language, probability = self._sequential(samples, options, kwargs, context)
            decoding = {"mode": "sequential", "batch_size": 1}
        decoding.update(backend=self.name, model=self.model_name, device=self.device, compute_type=self.compute_type)
        return Transcript(
            segments=segments,
            language=language,
            language_probability=probability,
            decoding=decoding,
            warnings=warnings,
        )

    def _sequential(self, samples: np.ndarray, options: InferenceConfig, kwargs: dict, context: DecodeContext):
        """One window (Whisper's own seek within it): reported segment by segment."""
        context.report(0, 1)
        generator, info = self.model.transcribe(samples, vad_filter=options.vad_filter, **kwargs)
        segments = []
        for segment in generator:  # the generator does the decoding
            segments.append(_segment(segment))
            context.report(0, 1, segments)
        context.report(1, 1, segments)
        return segments, info.language, info.language_probability

    def _batched(self, samples: np.ndarray, options: InferenceConfig, kwargs: dict, context: DecodeContext):
        """Decode the speech packed into windows, ``batch_size`` windows at a time, each batch followed by
        the second pass over what its windows left out (see windows.py): so the segments come out
        final and in time order, and are reported after every batch."""
        packed = windows.pack_speech(samples, options.chunk_length_s)
        if not packed.windows:
            context.report(0, 0, [])
            return [], options.language, None, 0
        segments, recovered, total = [], 0, len(packed.windows)
        context.report(0, total)
        language, probability = self._language(packed, kwargs["language"])
        kwargs = {**kwargs, "language": language}
        pipeline = _RequestPipeline(self.model)
        for first in range(0, total, options.batch_size):
            group = packed.windows[first: first + options.batch_size]
            generator, _ = pipeline.transcribe(
                packed.audio, batch_size=options.batch_size, clip_timestamps=[w.clip() for w in group], **kwargs
            )
            found = list(generator)
            missed = windows.leftovers(group, found) if options.recover_dropped_speech else []
            for window in missed:
                found += self._decode_alone(packed.audio, window, kwargs)
            recovered += len(missed)
            segments += [_segment(s) for s in packed.original_times(sorted(found, key=lambda s: s.start))
                         if _kept(s, options)]
            context.report(first + len(group), total, segments)
        return segments, language, probability, recovered

    def _language(self, packed: windows.PackedSpeech, language: str | None) -> tuple[str, float]:
        """The language asked for, or the one Whisper detects on the first 30 s of the packed windows'
        features, exactly as faster-whisper's batched pipeline does it over all the windows at once."""
        if language is not None or not self.is_multilingual:
            return language or "en", 1
        extractor = self.model.feature_extractor
        features, frames = [], 0
        for window in packed.windows:
            piece = packed.audio[int(window.start * TARGET_RATE): int(window.end * TARGET_RATE)]
            features.append(extractor(piece)[..., :-1])
            frames += features[-1].shape[-1]
            if frames >= extractor.nb_max_frames:
                break
        # faster-whisper's dummy frame (for empty audio) after the windows' features.
        features.append(np.full((self.model.model.n_mels, 1), -1.5, dtype="float32"))
        language, probability, _ = self.model.detect_language(features=np.concatenate(features, axis=1))
        return language, probability

    def _decode_alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict) -> list:
        """A window's remainder through the sequential decoder, as Whisper's own seek would decode it:
        with its temperature fallback, which the batched decoder lacks (a batched retry of a 1.4 s
        remainder of the 13.4 min file looped on one word ~150 times), and a token cap."""
        piece = audio[round(window.start * TARGET_RATE): round(window.end * TARGET_RATE)]
        # A cap far above any speech rate that still stops a loop early (each fallback retries).
        limit = math.ceil(10 * (window.end - window.start)) + 16
        generator, _ = self.model.transcribe(piece, vad_filter=False, max_new_tokens=limit, **kwargs)
        return [windows.shifted(segment, window.start) for segment in generator]


def _kept(segment, options: InferenceConfig) -> bool:
    # The batched pipeline ignores no_speech_threshold: applied here when the request sets it.
    return "no_speech_threshold" not in options.model_fields_set or decoding_options.keep(segment, options)


def _segment(segment) -> Segment:
    words = None
    if segment.words is not None:
        # faster-whisper gives numpy floats in places; the response needs plain JSON numbers.
        words = tuple(Word(float(w.start), float(w.end), w.word, float(w.probability)) for w in segment.words)
    return Segment(float(segment.start), float(segment.end), segment.text, words,
                   avg_logprob=_number(segment.avg_logprob), no_speech_prob=_number(segment.no_speech_prob),
                   compression_ratio=_number(segment.compression_ratio), temperature=_number(segment.temperature))


def _number(value) -> float | None:
    return None if value is None else float(value)
