"""transformers backend: the ``automatic-speech-recognition`` pipeline, with speculative decoding.

fp16 on CUDA, fp32 on CPU, SDPA attention on both. Word timestamps come from cross-attention (the
generation config's alignment heads), which SDPA does not return: those requests decode on an
eager-attention twin of the model that holds the very same weight tensors (``_eager_twin``). Nothing
is switched on a model while requests run, so requests on several threads need no lock: each call
builds its own generation state (transformers copies the generation config and makes a new cache per
``generate``), and the models, feature extractor and tokenizer are only read.

The windows, their languages and their recovery are the CTranslate2 backend's (windowed.py): audio longer
than one window is decoded as packed speech, ``batch_size`` windows at a time (a GPU decodes a batch in
about the time of one window), each window in its language (language_detection.py, asr/languages/) and
judged, a failed one decoded again; audio within one window is one such window. A window's encoder output
from language detection is reused by its decoding (kept_encoder.py).

Speculative decoding (``assisted: true``) takes an assistant with the main model's tokenizer: a
decoder-only model sharing the main encoder (distil-whisper style, ``WhisperForCausalLM``) or a
smaller full Whisper. transformers' assisted generation needs batch size 1 and greedy decoding, so
assisted requests decode their windows one at a time, greedy, and the response says so.
"""

from __future__ import annotations

import copy
import itertools
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from whisper_endpoint.asr import cost, decoding_options, encoder_outputs, tokens
from whisper_endpoint.asr.base import EngineSetup, check_language_options
from whisper_endpoint.asr.languages import language_parts
from whisper_endpoint.asr.long_form import windows
from whisper_endpoint.asr.transformers import confidence, kept_encoder, windowed
from whisper_endpoint.asr.transformers.assistant import load_assistant
from whisper_endpoint.asr.transformers.features import WindowFeatureExtractor
from whisper_endpoint.asr.transformers.language_detection import LanguageDetector
from whisper_endpoint.asr.transformers.transformers_onsets import at_onsets
from whisper_endpoint.asr.word_times import word_edges, word_spread
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Transcript
from whisper_endpoint.weights.transformers_compat import (
    dtype_argument,
    quiet_length_notice,
    set_attention,
    skip_unloadable_torchcodec,
)


@dataclass
class _Request:
    """One request's decoding: what each step reads."""

    samples: np.ndarray
    options: InferenceConfig
    window_s: float
    context: DecodeContext
    warnings: list[str]
    generate_kwargs: dict  # generate's options


logger = logging.getLogger(__name__)


class TransformersBackend:
    name = "transformers"

    def __init__(self, model_path: Path, setup: EngineSetup, assistant: tuple[Path, str | None] | None = None,
                 voices: language_parts.Voices | None = None):
        """``assistant``: the assistant model's folder and the name it was asked by; ``voices``: groups speech
        by speaker for the languages' rule (language_parts.py)."""
        import torch

        model_name, device = setup.model_name, setup.device
        from transformers import AutoTokenizer, WhisperForConditionalGeneration

        self.device = device
        self.dtype = torch.float16 if device == "cuda" else torch.float32
        # SDPA on CPU as well: eager attention made decoding ~2x slower there for the same text.
        self.attention = "sdpa"
        try:
            model = WhisperForConditionalGeneration.from_pretrained(
                model_path, attn_implementation=self.attention, low_cpu_mem_usage=True, **dtype_argument(self.dtype)
            )
            # The tokenizer alone: transformers 4's AutoProcessor insists on the slow tokenizer, which
            # needs vocab.json and merges.txt; a model may carry tokenizer.json only.
            tokenizer = AutoTokenizer.from_pretrained(model_path)
            features = WindowFeatureExtractor.from_pretrained(model_path)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"transformers could not load {model_name!r}: {exc}") from exc
        self.model = model.to(device).eval()
        self.max_batch_size = setup.max_batch_size
        skip_unloadable_torchcodec()
        quiet_length_notice()
        self.tokenizer = tokenizer
        if self.tokenizer.pad_token is None:  # batching pads with it; Whisper pads with <|endoftext|>
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.pipe = _asr_pipeline(self.model, tokenizer, features, device)
        self.word_pipe = _asr_pipeline(at_onsets(_eager_twin(self.model)), tokenizer, features, device)
        for pipe in (self.pipe, self.word_pipe):
            kept_encoder.install(pipe.model.get_encoder())
        self.voices = voices
        self.model_name = model_name
        self.model_path = model_path  # its files' digest is in a kept block's key (blocks/saved.py)
        self.assistant_name = assistant[1] if assistant is not None else None
        self.is_multilingual = bool(getattr(self.model.generation_config, "is_multilingual", False))
        self.assistant = None
        if assistant is not None:
            self.assistant = load_assistant(assistant[0], assistant[1] or str(assistant[0]), self)
        logger.info("loaded %s with transformers on %s (%s)", model_name, device, self.dtype)

    def transcribe(self, samples: np.ndarray, options: InferenceConfig,
                   context: DecodeContext | None = None) -> Transcript:
        check_language_options(options, is_multilingual=self.is_multilingual, model_name=self.model_name)
        context = context or DecodeContext()
        warnings: list[str] = []
        duration = len(samples) / SAMPLE_RATE
        window_s = cost.window_length(options, duration, warnings)
        long_audio = duration > window_s
        with cost.counting(duration, request_id=context.request_id) as counter, \
                encoder_outputs.active(self.device == "cpu"):
            generate_kwargs = self._generate_kwargs(options, warnings, long_audio)
            request = _Request(samples, options, window_s, context, warnings, generate_kwargs)
            decoder = windowed.Decoder(self, request, counter)
            detector = LanguageDetector(self, options.languages) if self.is_multilingual else None
            if long_audio:
                plan = self._plan(samples, window_s, options, detector)
                batch_size = self._batch_size(options, generate_kwargs, warnings)
                segments, language, probability = decoder.plan(
                    language_parts.cut_for_decoding(detector, plan, duration), batch_size)
                warnings += decoding_options.batched_warnings(options)
            else:
                plan = self._speech_language(samples, window_s, options, detector)
                if plan.mixed:  # several languages: decoded as long audio is
                    segments, language, probability = decoder.plan(
                        language_parts.cut_for_decoding(detector, plan, duration), 1)
                else:
                    language, probability = plan.language, plan.probability
                    segments = decoder.one_window(language)
            decoding = decoder.decoding
            if options.return_timestamps == "word":  # word ends next to pauses, from the signal (issue 59)
                segments, counter.words_spread = word_spread.spread_missing(segments)  # decoded without them
                segments = word_edges.snapped(segments, samples)
            segments = self._confidence(request, segments, decoding)  # counted too
        if decoding.pop("stopped"):
            counter.notes.append(cost.stopped_note(duration, max((s.end for s in segments), default=0.0)))
        warnings += counter.notes + cost.spread_note(counter)
        decoding.update(assisted="assistant_model" in generate_kwargs, encoder_windows=counter.used,
                        backend=self.name, model=self.model_name, device=self.device,
                        dtype=str(self.dtype).removeprefix("torch."))
        return Transcript(segments=segments, language=language,
                          language_probability=probability if options.language is None and self.is_multilingual
                          else None, decoding=decoding, warnings=warnings)

    def _plan(self, samples: np.ndarray, window_s: float, options: InferenceConfig,
              detector: LanguageDetector | None) -> language_parts.LanguagePlan:
        """The language asked for, or each span's (language_parts.py) over the windows of packed speech."""
        packed = windows.pack_speech(samples, window_s)
        if options.language is not None or detector is None or not packed.windows:
            return language_parts.given(options.language or "en", packed)
        return language_parts.plan(detector, packed, self.voices)

    def _speech_language(self, samples: np.ndarray, window_s: float, options: InferenceConfig,
                         detector: LanguageDetector | None) -> language_parts.LanguagePlan:
        """The languages of the speech in one window, on the window's own encoder output (kept for its
        decoding): over the speech's frames only, or over the whole window with drop_non_speech false."""
        empty = windows.PackedSpeech(np.zeros(0, dtype=np.float32), [], [])
        if options.language is not None or detector is None:
            return language_parts.given(options.language or "en", empty)
        if options.drop_non_speech:
            return language_parts.plan_one_window(detector, samples, window_s)
        window, _ = detector.window(samples, 0.0, len(samples) / SAMPLE_RATE, [])
        return language_parts.LanguagePlan(window.language, window.confidence, empty)

    def _batch_size(self, options: InferenceConfig, generate_kwargs: dict, warnings: list[str]) -> int:
        """Windows decoded at once: the request's (within the deployment's bound) where a GPU pays for it;
        one at a time on a CPU (it gains little from batching) and with the assistant (transformers'
        assisted generation takes one sequence)."""
        if "assistant_model" in generate_kwargs:
            if options.batch_size != 1 and "batch_size" in options.model_fields_set:
                warnings.append(f"assisted decoding runs at batch size 1 (batch_size {options.batch_size} was not "
                                "used)")
            return 1
        return cost.batch_size(options, self.max_batch_size, warnings) if self._batches_pay() else 1

    def _batches_pay(self) -> bool:
        return self.device == "cuda"

    def _generate_kwargs(self, options: InferenceConfig, warnings: list[str], long_audio: bool) -> dict:
        """generate's options for every window of the request; long audio decodes with the CTranslate2
        backend's beam (decoding_options.py), but greedy when the assistant is asked for and no beam is."""
        beam = decoding_options.beam_size(options, long_form=long_audio)
        if options.assisted and self.assistant is not None and "beam_size" not in options.model_fields_set:
            beam = 1
        kwargs: dict = {"num_beams": beam, **decoding_options.transformers_kwargs(options)}
        if self.is_multilingual:  # English-only models reject task/language
            kwargs["task"] = options.task
            kwargs["language"] = options.language
        prompt = self._prompt_ids(options, warnings)
        if prompt is not None:
            kwargs["prompt_ids"] = prompt
        if options.vad_filter:
            warnings.append("vad_filter is a ctranslate2 option; the transformers backend decoded all audio")
        if options.assisted:
            if self.assistant is None:
                warnings.append("'assisted' needs ASSISTANT_MODEL; decoded unassisted")
            elif beam > 1:
                warnings.append("assisted decoding is greedy only; beam search ran unassisted")
            elif options.return_timestamps != "none":
                # Measured with real weights (base assisting itself): with timestamp tokens the assisted
                # text repeated a sentence the unassisted text has once. Speculative decoding must not
                # change the text, so it runs only where it provably does not.
                warnings.append(
                    "assisted decoding runs with return_timestamps 'none' only (with timestamps the "
                    "assisted text can differ); decoded unassisted"
                )
            else:
                kwargs["assistant_model"] = self.assistant
        return kwargs

    def _confidence(self, request: _Request, segments: list[Segment], decoding: dict):
        """Scores asked for (return_confidence), or needed by no_speech_threshold (Whisper's rule on the
        scored windows): one more encoder pass per 30 s, counted in ``decoding``."""
        options = request.options
        threshold = "no_speech_threshold" in options.model_fields_set
        if not (options.return_confidence or threshold):
            return segments
        segments, decoding["confidence_windows"] = confidence.scored(self, request.samples, segments,
                                                                     request.generate_kwargs, options.temperature)
        if threshold:
            segments = [s for s in segments if decoding_options.keep(s, options.no_speech_threshold)]
        return segments

    def _prompt_ids(self, options: InferenceConfig, warnings: list[str]):
        """``<|startofprev|>``, the hotwords' and the prompt's tokens within Whisper's budget (tokens.py), or None."""
        import torch

        hotwords, prompt = tokens.fit_prompts(
            options.hotwords,
            options.initial_prompt,
            encode=lambda part: self.tokenizer(part, add_special_tokens=False).input_ids,
            decode=lambda ids: self.tokenizer.decode(list(ids)),
            first_special_id=self.tokenizer.eos_token_id,
            max_length=self.model.config.max_target_positions,
            warnings=warnings,
        )
        if not (hotwords.ids or prompt.ids):
            return None
        start = self.tokenizer.convert_tokens_to_ids("<|startofprev|>")
        return torch.tensor([start, *hotwords.ids, *prompt.ids], device=self.device)


def _asr_pipeline(model, tokenizer, features, device: str):
    from transformers import pipeline

    return pipeline("automatic-speech-recognition", model=model, tokenizer=tokenizer, feature_extractor=features,
                    device=device)


def _eager_twin(model):
    """The model with eager attention, sharing every weight tensor with ``model`` (no second copy).

    A deep copy whose memo already holds each parameter and buffer copies only the module tree and
    its config; switching the twin's attention leaves ``model`` on SDPA.
    """
    shared = {id(tensor): tensor for tensor in itertools.chain(model.parameters(), model.buffers())}
    twin = copy.deepcopy(model, memo=shared)
    set_attention(twin, "eager")
    return twin.eval()
