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

import ctranslate2
import numpy as np

from whisper_endpoint.asr import cost, decoding_options, encoder_outputs, tokens
from whisper_endpoint.asr.base import EngineSetup, check_language_options
from whisper_endpoint.asr.ctranslate2 import batched, sequential
from whisper_endpoint.asr.ctranslate2.decode_state import DecodeState
from whisper_endpoint.asr.ctranslate2.language_detection import LanguageDetector
from whisper_endpoint.asr.ctranslate2.model import CountingModel
from whisper_endpoint.asr.languages import language_parts
from whisper_endpoint.asr.long_form import windows
from whisper_endpoint.asr.word_times import word_edges, word_spread
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.types import SAMPLE_RATE, Transcript

logger = logging.getLogger(__name__)
SAMPLING_SEED = 0  # CTranslate2's generator for the temperature fallback (see CTranslate2Backend.__init__)


class CTranslate2Backend:
    name = "ctranslate2"

    def __init__(self, model_path: str, setup: EngineSetup, voices: language_parts.Voices | None = None):
        # The temperature fallback samples with each CTranslate2 worker thread's own generator, seeded
        # when the thread first samples: a fixed seed makes a fresh server decode a file the same way
        # twice (by default it is seeded at random). There is no seed per call.
        ctranslate2.set_random_seed(SAMPLING_SEED)
        model_name, device, compute_type = setup.model_name, setup.device, setup.compute_type
        try:
            self.model = CountingModel(
                model_path,
                device=device,
                compute_type=compute_type,
                cpu_threads=setup.cpu_threads,
                num_workers=setup.num_workers,
                local_files_only=True,
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelLoadError(f"faster-whisper could not load {model_name!r}: {exc}") from exc
        self.model_name = model_name
        self.model_path = model_path  # its files' digest is in a kept block's key (blocks/saved.py)
        self.device, self.compute_type = device, compute_type
        self.max_batch_size = setup.max_batch_size
        self.voices = voices  # groups speech by speaker for the languages' rule (language_parts.py)
        self.is_multilingual = bool(self.model.model.is_multilingual)
        self.num_workers = setup.num_workers
        logger.info("loaded %s with ctranslate2 on %s (%s, %d workers)", model_name, device, compute_type,
                    setup.num_workers)

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
                encoder_outputs.active(self.model.model.device == "cpu"):
            state = DecodeState(self.model, samples, options, kwargs, context, counter)
            detector = LanguageDetector(self.model, options.languages)
            if duration > window_s:
                batch_size = cost.batch_size(options, self.max_batch_size, warnings)
                plan = self._plan(samples, window_s, options, detector)
                segments, language, probability = batched.decode(
                    state, language_parts.cut_for_decoding(detector, plan, duration), window_s, batch_size)
                warnings += decoding_options.batched_warnings(options)
            else:
                plan = self._speech_language(samples, window_s, options, detector)
                if plan is not None and plan.mixed:  # several languages: decoded as the batched path does
                    segments, language, probability = batched.decode(
                        state, language_parts.cut_for_decoding(detector, plan, duration), window_s, 1)
                else:
                    kwargs["language"] = plan.language if plan else options.language
                    segments, language, probability = sequential.decode(state)
                    probability = plan.probability if plan else probability
        decoding = state.decoding
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

    def _speech_language(self, samples: np.ndarray, window_s: float, options: InferenceConfig,
                         detector: LanguageDetector) -> language_parts.LanguagePlan | None:
        """The languages of the speech in one window, on the window's own encoder output (kept for its
        decoding) over the speech's frames only (a silent start does not decide it); None: not detected."""
        if options.language is not None or not options.drop_non_speech or not self.is_multilingual:
            return None
        return language_parts.plan_one_window(detector, samples, window_s)

    def _plan(self, samples, window_s, options: InferenceConfig,
              detector: LanguageDetector) -> language_parts.LanguagePlan:
        """The language asked for, or each span's (language_parts.py) over the windows of packed speech."""
        packed = windows.pack_speech(samples, window_s)
        if options.language is not None or not self.is_multilingual or not packed.windows:
            return language_parts.given(options.language or "en", packed)
        return language_parts.plan(detector, packed, self.voices)
