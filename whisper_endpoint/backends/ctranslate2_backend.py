"""CTranslate2 backend through faster-whisper: int8/float16/float32, much faster than PyTorch on CPU.

Audio that fits one window runs through ``WhisperModel.transcribe`` (sequential, conditioned on
previous text). Longer audio runs through ``BatchedInferencePipeline`` over the speech found by the
bundled Silero VAD, packed into windows (see windows.py), ``batch_size`` windows at once; the response's
``decoding`` block says which path ran and how many encoder windows it cost (see cost.py).

Requests may run on several threads at once: the model is shared (``num_workers`` CTranslate2 workers
decode that many requests in parallel; more requests wait for a free worker), everything a decode
keeps between its steps lives in objects made for that request (the batched pipeline, the window
counter).
"""

from __future__ import annotations

import logging
import math

import numpy as np
from faster_whisper import BatchedInferencePipeline, WhisperModel

from whisper_endpoint.audio import TARGET_RATE
from whisper_endpoint.backends import cost, tokens, windows
from whisper_endpoint.backends.base import check_language_options
from whisper_endpoint.config import InferenceConfig
from whisper_endpoint.errors import ModelLoadError
from whisper_endpoint.results import Segment, Transcript, Word

logger = logging.getLogger(__name__)


class _CountingModel(WhisperModel):
    """faster-whisper's model, counting every encoder window (language detection, batches, seeks)."""

    def encode(self, features):
        cost.count(1 if features.ndim == 2 else features.shape[0])
        return super().encode(features)


class CTranslate2Backend:
    name = "ctranslate2"

    def __init__(self, model_path: str, *, model_name: str, device: str, compute_type: str, cpu_threads: int = 0,
                 max_batch_size: int = 8, num_workers: int = 1):
        try:
            self.model = _CountingModel(
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
        self.max_batch_size = max_batch_size
        self.is_multilingual = bool(self.model.model.is_multilingual)
        self.num_workers = num_workers
        logger.info("loaded %s with ctranslate2 on %s (%s, %d workers)", model_name, device, compute_type, num_workers)

    def transcribe(self, samples: np.ndarray, options: InferenceConfig) -> Transcript:
        check_language_options(options, is_multilingual=self.is_multilingual, model_name=self.model_name)
        warnings = []
        if options.assisted:
            warnings.append("'assisted' needs the transformers backend with ASSISTANT_MODEL; decoded unassisted")
        duration = len(samples) / TARGET_RATE
        window_s = cost.window_length(options, duration, warnings)
        kwargs = dict(
            language=options.language,
            task=options.task,
            beam_size=options.beam_size,
            word_timestamps=options.return_timestamps == "word",
            without_timestamps=options.return_timestamps == "none",
            initial_prompt=self._prompt(options.initial_prompt, warnings).text,
        )
        with cost.counting(duration) as counter:
            if duration > window_s:
                batch_size = cost.batch_size(options, self.max_batch_size, warnings)
                segments, language, probability, decoding = self._batched(
                    samples, window_s, batch_size, options, kwargs, counter)
            else:
                generator, info = self.model.transcribe(samples, vad_filter=options.vad_filter, **kwargs)
                segments, stopped = _consume(generator)
                language, probability = info.language, info.language_probability
                decoding = {"mode": "sequential", "batch_size": 1, "stopped": stopped}
        if decoding.pop("stopped"):
            counter.notes.append(cost.stopped_note(duration, max((s.end for s in segments), default=0.0)))
        decoding.update(encoder_windows=counter.used, backend=self.name, model=self.model_name, device=self.device,
                        compute_type=self.compute_type)
        return Transcript(
            segments=[_segment(segment) for segment in segments],
            language=language,
            language_probability=probability,
            decoding=decoding,
            warnings=warnings + counter.notes,
        )

    def _prompt(self, text: str | None, warnings: list[str]) -> tokens.Prompt:
        tokenizer = self.model.hf_tokenizer
        return tokens.fit_prompt(
            text,
            encode=lambda t: tokenizer.encode(t, add_special_tokens=False).ids,
            decode=lambda ids: tokenizer.decode(list(ids), skip_special_tokens=False),
            first_special_id=tokenizer.token_to_id("<|endoftext|>"),
            max_length=self.model.max_length,
            warnings=warnings,
        )

    def _batched(self, samples, window_s, batch_size, options, kwargs, counter):
        """Decode the speech packed into windows, then once more what any window left out (see windows.py)."""
        packed = windows.pack_speech(samples, window_s)
        decoding = {"mode": "batched", "batch_size": batch_size, "chunk_length_s": window_s, "segmentation": "vad",
                    "remainders_decoded_again": 0, "stopped": False}
        if not packed.windows:
            return [], options.language, None, decoding
        # One pipeline per request, sharing the model: the pipeline keeps the last word's end time on
        # itself between batches (word timestamps) and resets it only when its generator finishes, so
        # a shared one mixed word times across concurrent requests and kept a failed request's value.
        generator, info = BatchedInferencePipeline(self.model).transcribe(
            packed.audio, batch_size=batch_size, clip_timestamps=[w.clip() for w in packed.windows], **kwargs
        )
        segments, decoding["stopped"] = _consume(generator)
        missed = windows.leftovers(packed.windows, segments) if options.recover_dropped_speech else []
        for window in missed:
            if counter.spent:
                counter.notes.append(
                    f"{len(missed) - decoding['remainders_decoded_again']} of {len(missed)} window remainders were "
                    f"not decoded again: the request's bound of {counter.budget} encoder windows was spent"
                )
                break
            segments += self._decode_alone(packed.audio, window, {**kwargs, "language": info.language})
            decoding["remainders_decoded_again"] += 1
        segments = packed.original_times(sorted(segments, key=lambda s: s.start))
        return segments, info.language, info.language_probability, decoding

    def _decode_alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict) -> list:
        """A window's remainder through the sequential decoder, as Whisper's own seek would decode it:
        with its temperature fallback, which the batched decoder lacks (a batched retry of a 1.4 s
        remainder of the 13.4 min file looped on one word ~150 times), and a token cap."""
        piece = audio[round(window.start * TARGET_RATE): round(window.end * TARGET_RATE)]
        # A cap far above any speech rate that still stops a loop early (each fallback retries), within
        # what the decoder context leaves after the longest prompt (tokens.py).
        limit = min(math.ceil(10 * (window.end - window.start)) + 16, tokens.output_budget(self.model.max_length))
        generator, _ = self.model.transcribe(piece, vad_filter=False, max_new_tokens=limit, **kwargs)
        segments, _ = _consume(generator)
        return [windows.shifted(segment, window.start) for segment in segments]


def _consume(generator) -> tuple[list, bool]:
    """Run a faster-whisper generator (it decodes as it is read) until it ends or the window budget is
    spent: the segments decoded, and whether it was stopped."""
    segments = []
    try:
        for segment in generator:
            segments.append(segment)
    except cost.BudgetSpent:
        return segments, True
    return segments, False


def _segment(segment) -> Segment:
    words = None
    if segment.words is not None:
        # faster-whisper gives numpy floats in places; the response needs plain JSON numbers.
        words = tuple(Word(float(w.start), float(w.end), w.word, float(w.probability)) for w in segment.words)
    return Segment(float(segment.start), float(segment.end), segment.text, words)
