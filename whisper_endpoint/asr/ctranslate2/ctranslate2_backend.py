"""CTranslate2 backend through faster-whisper: int8/float16/float32, much faster than PyTorch on CPU.

Audio that fits one window runs through ``WhisperModel.transcribe`` (sequential, conditioned on
previous text). Longer audio runs through ``BatchedInferencePipeline`` over the speech found by the
bundled Silero VAD, packed into windows (see windows.py), ``batch_size`` windows at once; the response's
``decoding`` block says which path ran and how many encoder windows it cost (see cost.py). The
request's ``DecodeContext`` hears of every batch (and every segment of the sequential path), and stops
the decode there when asked to.

Requests may run on several threads at once: the model is shared (``num_workers`` CTranslate2 workers
decode that many requests in parallel; more requests wait for a free worker), everything a decode
keeps between its steps lives in objects made for that request.
"""

from __future__ import annotations

import logging
import math

import ctranslate2
import numpy as np
from faster_whisper import BatchedInferencePipeline, WhisperModel

from whisper_endpoint.asr import cost, decoding_options, speech, tokens
from whisper_endpoint.asr.base import check_language_options
from whisper_endpoint.asr.ctranslate2 import encoder_cache
from whisper_endpoint.asr.ctranslate2.alignment import WindowByWindowAlignment
from whisper_endpoint.asr.ctranslate2.encoding import EncoderInPieces
from whisper_endpoint.asr.languages import language_parts
from whisper_endpoint.asr.long_form import (
    failed_windows,
    recovery,
    window_fallback,
    windows,
)
from whisper_endpoint.asr.word_times import word_edges, word_spread
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Transcript, Word

logger = logging.getLogger(__name__)
RETRY_TEMPERATURES = 3  # a failed window's decodes again go at most this far down the fallback schedule
SAMPLING_SEED = 0  # CTranslate2's generator for the temperature fallback (see CTranslate2Backend.__init__)


class _CountingModel(WindowByWindowAlignment, EncoderInPieces, WhisperModel):
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
                 max_batch_size: int = 8, num_workers: int = 1, voices: language_parts.Voices | None = None):
        # The temperature fallback samples with each CTranslate2 worker thread's own generator, seeded
        # when the thread first samples: a fixed seed makes a fresh server decode a file the same way
        # twice (by default it is seeded at random). There is no seed per call.
        ctranslate2.set_random_seed(SAMPLING_SEED)
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
        self.model_path = model_path  # its files' digest is in a kept block's key (blocks/saved.py)
        self.device, self.compute_type = device, compute_type
        self.max_batch_size = max_batch_size
        self.voices = voices  # groups speech by speaker for the languages' rule (language_parts.py)
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
        duration = len(samples) / SAMPLE_RATE
        window_s = cost.window_length(options, duration, warnings)
        kwargs = dict(
            language=options.language,
            task=options.task,
            beam_size=decoding_options.beam_size(options, long_form=duration > window_s),
            word_timestamps=options.return_timestamps == "word",
            without_timestamps=options.return_timestamps == "none",
            **self._prompts(options, warnings),
            **decoding_options.faster_whisper_kwargs(options),
        )
        with cost.counting(duration, request_id=context.request_id) as counter, \
                encoder_cache.active(self.model.model.device == "cpu"):
            if duration > window_s:
                batch_size = cost.batch_size(options, self.max_batch_size, warnings)
                segments, language, probability, decoding = self._batched(
                    samples, window_s, batch_size, options, kwargs, context, counter)
                warnings += decoding_options.batched_warnings(options)
            else:
                plan = self._speech_language(samples, window_s, options)
                if plan is not None and plan.mixed:  # several languages: decoded as the batched path does
                    segments, language, probability, decoding = self._batched(
                        samples, window_s, 1, options, kwargs, context, counter, plan)
                else:
                    kwargs["language"] = plan.language if plan else options.language
                    segments, language, probability, stopped, speech_s = self._sequential(samples, options, kwargs,
                                                                                         context, counter)
                    probability = plan.probability if plan else probability
                    decoding = {"mode": "sequential", "batch_size": 1, "stopped": stopped}
                    segments = self._sequential_checked(samples, segments, speech_s, options, kwargs, decoding,
                                                        counter)
        if decoding.pop("stopped"):
            counter.notes.append(cost.stopped_note(duration, max((s.end for s in segments), default=0.0)))
        if options.return_timestamps == "word":  # word ends next to pauses, from the signal (issue 59)
            segments, spread = word_spread.spread_missing(segments)  # decoded again without word times
            counter.words_spread += spread
            segments = word_edges.snapped(segments, samples)
        decoding.update(encoder_windows=counter.used, backend=self.name, model=self.model_name, device=self.device,
                        compute_type=self.compute_type)
        return Transcript(
            segments=segments,
            language=language,
            language_probability=probability if options.language is None and self.is_multilingual else None,
            decoding=decoding,
            warnings=warnings + counter.notes + cost.spread_note(counter),
        )

    def _prompts(self, options: InferenceConfig, warnings: list[str]) -> dict:
        """hotwords and initial_prompt within Whisper's prompt budget (tokens.py), as faster-whisper takes them."""
        tokenizer = self.model.hf_tokenizer
        hotwords, prompt = tokens.fit_prompts(
            options.hotwords,
            options.initial_prompt,
            encode=lambda t: tokenizer.encode(t, add_special_tokens=False).ids,
            decode=lambda ids: tokenizer.decode(list(ids), skip_special_tokens=False),
            first_special_id=tokenizer.token_to_id("<|endoftext|>"),
            max_length=self.model.max_length,
            warnings=warnings,
        )
        return {"hotwords": hotwords.text, "initial_prompt": prompt.text}

    def _speech_language(self, samples: np.ndarray, window_s: float,
                         options: InferenceConfig) -> language_parts.LanguagePlan | None:
        """The languages of the speech in one window, on the window's own encoder output (kept for its
        decoding) over the speech's frames only (a silent start does not decide it); None: not detected."""
        if options.language is not None or not options.drop_non_speech or not self.is_multilingual:
            return None
        return language_parts.plan_one_window(self.model, samples, window_s, options.languages)

    def _sequential(self, samples: np.ndarray, options: InferenceConfig, kwargs: dict, context: DecodeContext,
                    counter):
        """One window (Whisper's own seek within it): reported segment by segment; decoded again the plain
        way after an error (window_fallback.py)."""
        context.report(0, 1)
        found = {}

        def decode(attempt: dict) -> list[Segment]:
            first = "info" not in found  # a try after an error reports its segments once, at the end
            generator, info = self.model.transcribe(samples, vad_filter=options.vad_filter, **attempt)
            found.update(info=info, stopped=False)
            segments = []
            try:
                for segment in generator:  # the generator does the decoding
                    segments.append(_segment(segment, info.language))
                    if first:
                        context.report(0, 1, segments)
            except cost.BudgetSpent:
                found["stopped"] = True
            return segments

        segments = window_fallback.decoded(decode, kwargs, f"the window of {len(samples) / SAMPLE_RATE:.1f} s",
                                           counter)
        context.report(1, 1, segments)
        info = found.get("info")
        if info is None:  # every try failed before the decoder started
            return segments, kwargs["language"], None, False, None
        speech_s = info.duration_after_vad if options.vad_filter else None
        return segments, info.language, info.language_probability, found["stopped"], speech_s

    def _sequential_checked(self, samples, segments, speech_s, options, kwargs, decoding, counter) -> list[Segment]:
        """The one window judged as the batched ones are (failed_windows.py); decoded again when it failed."""
        decoding.update(windows_decoded_again=0, windows_not_recovered=0)
        reason = failed_windows.failure(recovery.judged(segments, speech_s))
        if reason is None or decoding["stopped"]:
            return segments

        def decode(window: windows.Window) -> list[Segment]:
            piece = samples[round(window.start * SAMPLE_RATE): round(window.end * SAMPLE_RATE)]

            def attempt(options_now: dict) -> list[Segment]:
                generator, _ = self.model.transcribe(piece, vad_filter=options.vad_filter, **options_now)
                return [_segment(windows.shifted(s, window.start), kwargs["language"])
                        for s in _consume(generator)[0]]

            return window_fallback.decoded(attempt, _retry(kwargs), _named(window), counter)

        spans = speech.find_speech(samples).spans
        pauses = [(end + start) / 2 for (_, end), (start, _) in zip(spans, spans[1:])]
        whole = windows.Window(0.0, len(samples) / SAMPLE_RATE)
        again = recovery.recover(whole, segments, decode, recovery.quiet_cuts(samples, whole, pauses), reason,
                                 speech_s=speech_s)
        recovery.count(again, decoding, counter.notes)
        return again.segments

    def _batched(self, samples, window_s, batch_size, options, kwargs, context: DecodeContext, counter,
                 plan: language_parts.LanguagePlan | None = None):
        """Decode the speech packed into windows, ``batch_size`` windows at a time, each batch followed by
        the second pass over what its windows left out (see windows.py): so the segments come out
        final and in time order, and are reported after every batch. Stops where the window budget is
        spent (cost.py). Speech in several languages: see ``_decode_group``."""
        decoding = {"mode": "batched", "batch_size": batch_size, "beam_size": kwargs["beam_size"],
                    "chunk_length_s": window_s, "segmentation": "vad",
                    "remainders_decoded_again": 0, "windows_decoded_again": 0, "windows_not_recovered": 0,
                    "stopped": False}
        plan = language_parts.cut_for_decoding(self.model, plan or self._plan(samples, window_s, options, counter),
                                               len(samples) / SAMPLE_RATE, counter)
        packed = plan.packed
        if not packed.windows:
            context.report(0, 0, [])
            return [], options.language, None, decoding
        segments, skipped, total = [], 0, len(packed.windows)
        context.report(0, total)
        pipeline = _RequestPipeline(self.model)
        for first in range(0, total, batch_size):
            group = packed.windows[first: first + batch_size]
            found, skipped_now = self._decode_group(pipeline, plan, group, batch_size, options, kwargs, decoding,
                                                    counter)
            skipped += skipped_now
            segments += [_segment(s, language) for s, language in found if _kept(s, options)]
            context.report(first + len(group), total, segments)
            if decoding["stopped"]:
                break
        if skipped:
            counter.notes.append(
                f"{skipped} of {skipped + decoding['remainders_decoded_again']} window remainders were not decoded "
                f"again: the request's bound of {counter.budget} encoder windows was spent"
            )
        if plan.mixed:
            decoding["languages_decoded"] = sorted({code for _, _, code in plan.spans})
        return segments, plan.language, plan.probability, decoding

    def _plan(self, samples, window_s, options: InferenceConfig, counter) -> language_parts.LanguagePlan:
        """The language asked for, or each span's (language_parts.py) over the windows of packed speech."""
        packed = windows.pack_speech(samples, window_s)
        if options.language is not None or not self.is_multilingual or not packed.windows:
            return language_parts.given(options.language or "en", packed)
        return language_parts.plan(self.model, packed, options.languages, self.voices, counter)

    def _decode_group(self, pipeline, plan, group, batch_size, options, kwargs, decoding, counter):
        """One batch of windows: (faster-whisper segment in original time, its language) in time order, and
        the number of remainders not decoded again (the budget was spent). Windows in several languages
        (each in one: language_parts.cut_for_decoding) are decoded one language at a time."""
        language_of = {window: plan.language_of(window) for window in group}
        found, skipped = [], 0
        for language in dict.fromkeys(language_of.values()):
            own = [window for window in group if language_of[window] == language]
            decoded, skipped_now = self._decode_windows(pipeline, plan.packed, own, batch_size, options,
                                                        {**kwargs, "language": language}, decoding, counter)
            skipped += skipped_now
            found += [(segment, language) for segment in decoded]
            if decoding["stopped"]:
                break
        found.sort(key=lambda pair: pair[0].start)
        restored = plan.packed.original_times([segment for segment, _ in found])
        return [(segment, language) for segment, (_, language) in zip(restored, found)], skipped

    def _decode_windows(self, pipeline, packed, group, batch_size, options, kwargs, decoding, counter):
        """``group``'s windows in one language, each judged and a failed one decoded again (``_checked``),
        with the second pass over their remainders (packed time), each segment within its window."""
        try:
            generator, _ = pipeline.transcribe(
                packed.audio, batch_size=batch_size, clip_timestamps=[w.clip() for w in group], **kwargs
            )
            found, decoding["stopped"] = _consume(generator)
        except window_fallback.PASSED_ON:
            raise
        except Exception:  # one window's error: each window of the batch decoded alone (window_fallback.py)
            logger.exception("request %s: a batch of %d windows failed; decoding each alone", counter.request_id,
                             len(group))
            counter.notes.append(f"a batch of {len(group)} window(s) was decoded again window by window after an "
                                 f"error (request {counter.request_id})")
            found = [segment for window in group for segment in self._alone(packed.audio, window, kwargs, counter)]
            decoding["stopped"] = counter.spent  # a window decoded alone stops silently at the bound
        found, redone = self._checked(packed, group, found, kwargs, decoding, counter)
        missed = windows.leftovers([w for w in group if w not in redone], found) \
            if options.recover_dropped_speech else []
        skipped = 0
        for window in missed:
            if counter.spent:
                skipped += 1
                continue
            found += self._alone(packed.audio, window, kwargs, counter)
            decoding["remainders_decoded_again"] += 1
        return windows.within(found, group), skipped

    def _checked(self, packed: windows.PackedSpeech, group: list[windows.Window], found: list, kwargs: dict,
                 decoding: dict, counter) -> tuple[list, set]:
        """Each window of a batch judged (failed_windows.py); a failed one decoded again (recovery.py): the
        batch's segments with those windows' replaced, and the windows decoded again."""
        redone = set()
        for window in group:
            mine = [s for s in found if window.holds(s.start, s.end)]
            reason = failed_windows.failure(recovery.judged(mine, window.end - window.start))
            if reason is None or counter.spent:
                continue
            again = recovery.recover(window, mine, lambda w: self._alone(packed.audio, w, _retry(kwargs), counter),
                                     recovery.quiet_cuts(packed.audio, window, packed.pauses()), reason)
            recovery.count(again, decoding, counter.notes)
            found = [s for s in found if all(s is not m for m in mine)] + again.segments
            redone.add(window)
        return found, redone

    def _alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict, counter) -> list:
        """``_decode_alone``, decoded again the plain way after an error (window_fallback.py)."""
        return window_fallback.decoded(lambda options: self._decode_alone(audio, window, options), kwargs,
                                       _named(window), counter)

    def _decode_alone(self, audio: np.ndarray, window: windows.Window, kwargs: dict) -> list:
        """A window's remainder through the sequential decoder, as Whisper's own seek would decode it:
        with its temperature fallback, which the batched decoder lacks (a batched retry of a 1.4 s
        remainder of the 13.4 min file looped on one word ~150 times), and a token cap."""
        piece = audio[round(window.start * SAMPLE_RATE): round(window.end * SAMPLE_RATE)]
        # A cap far above any speech rate that still stops a loop early (each fallback retries), within
        # what the decoder context leaves after the longest prompt (tokens.py). faster-whisper puts the
        # hotwords before up to 223 tokens of previous text on each later seek: they come off it too.
        hotwords = kwargs.get("hotwords")
        reserve = len(self.model.hf_tokenizer.encode(" " + hotwords.strip(), add_special_tokens=False).ids) \
            if hotwords else 0
        limit = min(math.ceil(10 * (window.end - window.start)) + 16,
                    tokens.output_budget(self.model.max_length) - reserve)
        generator, _ = self.model.transcribe(piece, vad_filter=False, max_new_tokens=limit, **kwargs)
        segments, _ = _consume(generator)
        return [windows.shifted(segment, window.start) for segment in segments]


def _retry(kwargs: dict) -> dict:
    """A failed window's second decode: sequential, with the temperature fallback, without the previous
    text (a loop feeds on it), the best of two samples at each temperature above 0. The fallback goes
    hotter on repetition (compression ratio) only, and at most twice: on a language the model knows
    poorly every temperature is unlikely, and all six with the log-probability test cost 4.8x the CPU of
    stress_cs_en_switch_library_society; three, on repetition only, 3.6x, and recovered its 3 windows."""
    temperature = kwargs["temperature"]
    schedule = temperature if isinstance(temperature, list) else \
        [temperature, *(t for t in decoding_options.FALLBACK_TEMPERATURES if t > temperature)]
    return {**kwargs, "temperature": schedule[:RETRY_TEMPERATURES], "condition_on_previous_text": False,
            "initial_prompt": None, "best_of": 2, "log_prob_threshold": None}


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


def _named(window: windows.Window) -> str:
    return f"a window of {window.end - window.start:.1f} s of speech"


def _kept(segment, options: InferenceConfig) -> bool:
    # The batched pipeline ignores no_speech_threshold: applied here when the request sets it.
    explicit = "no_speech_threshold" in options.model_fields_set
    return not explicit or decoding_options.keep(segment, options.no_speech_threshold)


def _segment(segment, language: str | None = None) -> Segment:
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
