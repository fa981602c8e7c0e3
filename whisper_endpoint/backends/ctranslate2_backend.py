"""CTranslate2 backend through faster-whisper: int8/float16/float32, much faster than PyTorch on CPU.

Audio that fits one window runs through ``WhisperModel.transcribe`` (sequential, conditioned on
previous text). Longer audio runs through ``BatchedInferencePipeline`` over the speech found by the
bundled Silero VAD, packed into windows (see windows.py), ``batch_size`` windows at once; the response's
``decoding`` block says which path ran.

Requests may run on several threads at once: the model is shared (``num_workers`` CTranslate2 workers
decode that many requests in parallel; more requests wait for a free worker), everything a decode
keeps between its steps lives in objects made for that request.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from whisper_endpoint.audio import TARGET_RATE
from whisper_endpoint.backends import speech, windows
from whisper_endpoint.backends.base import check_language_options
from whisper_endpoint.config import InferenceConfig
from whisper_endpoint.errors import ModelLoadError
from whisper_endpoint.results import Segment, Transcript, Word

logger = logging.getLogger(__name__)


class CTranslate2Backend:
    name = "ctranslate2"

    def __init__(self, model_path: str, *, model_name: str, device: str, compute_type: str, cpu_threads: int = 0,
                 num_workers: int = 1):
        from faster_whisper import WhisperModel

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

    def transcribe(self, samples: np.ndarray, options: InferenceConfig) -> Transcript:
        check_language_options(options, is_multilingual=self.is_multilingual, model_name=self.model_name)
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
        )
        if len(samples) > options.chunk_length_s * TARGET_RATE:
            segments, language, probability, recovered = self._batched(samples, options, kwargs)
            decoding = {"mode": "batched", "batch_size": options.batch_size, "segmentation": "vad",
                        "remainders_decoded_again": recovered}
        else:
            kwargs["language"], detected = self._speech_language(samples, options)
            generator, info = self.model.transcribe(samples, vad_filter=options.vad_filter, **kwargs)
            segments = list(generator)  # the generator does the decoding
            language, probability = info.language, detected or info.language_probability
            decoding = {"mode": "sequential", "batch_size": 1}
        result = [_segment(segment) for segment in segments]
        decoding.update(backend=self.name, model=self.model_name, device=self.device, compute_type=self.compute_type)
        return Transcript(
            segments=result,
            language=language,
            language_probability=probability if options.language is None and self.is_multilingual else None,
            decoding=decoding,
            warnings=warnings,
        )

    def _speech_language(self, samples: np.ndarray, options: InferenceConfig) -> tuple[str | None, float | None]:
        """The language of the first 30 s of speech, not of the first 30 s of audio (a silent start would
        decide it); the batched path already detects on speech only."""
        if options.language is not None or not options.drop_non_speech or not self.is_multilingual:
            return options.language, None
        language, probability, _ = self.model.detect_language(audio=speech.find_speech(samples).audio(samples))
        return language, probability

    def _batched(self, samples: np.ndarray, options: InferenceConfig, kwargs: dict):
        """Decode the speech packed into windows, then once more what any window left out (see windows.py)."""
        packed = windows.pack_speech(samples, options.chunk_length_s)
        if not packed.windows:
            return [], options.language, None, 0
        segments, info = self._decode_windows(packed.audio, packed.windows, options, kwargs)
        missed = windows.leftovers(packed.windows, segments) if options.recover_dropped_speech else []
        for window in missed:
            segments += self._decode_alone(packed.audio, window, {**kwargs, "language": info.language})
        segments = packed.original_times(sorted(segments, key=lambda s: s.start))
        return segments, info.language, info.language_probability, len(missed)

    def _decode_windows(self, audio, groups, options, kwargs):
        from faster_whisper import BatchedInferencePipeline

        # One pipeline per request, sharing the model: the pipeline keeps the last word's end time on
        # itself between batches (word timestamps) and resets it only when its generator finishes, so
        # a shared one mixed word times across concurrent requests and kept a failed request's value.
        batched = BatchedInferencePipeline(self.model)
        generator, info = batched.transcribe(
            audio, batch_size=options.batch_size, clip_timestamps=[w.clip() for w in groups], **kwargs
        )
        return list(generator), info

    def _decode_alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict) -> list:
        """A window's remainder through the sequential decoder, as Whisper's own seek would decode it:
        with its temperature fallback, which the batched decoder lacks (a batched retry of a 1.4 s
        remainder of the 13.4 min file looped on one word ~150 times), and a token cap."""
        piece = audio[round(window.start * TARGET_RATE): round(window.end * TARGET_RATE)]
        # A cap far above any speech rate that still stops a loop early (each fallback retries).
        limit = math.ceil(10 * (window.end - window.start)) + 16
        generator, _ = self.model.transcribe(piece, vad_filter=False, max_new_tokens=limit, **kwargs)
        return [windows.shifted(segment, window.start) for segment in generator]


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
