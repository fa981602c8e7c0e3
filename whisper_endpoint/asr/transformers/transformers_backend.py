"""transformers backend: the ``automatic-speech-recognition`` pipeline, with speculative decoding.

fp16 on CUDA, fp32 on CPU, SDPA attention on both. Word timestamps come from cross-attention (the
generation config's alignment heads), which SDPA does not return: those requests decode on an
eager-attention twin of the model that holds the very same weight tensors (``_eager_twin``). Nothing
is switched on a model while requests run, so requests on several threads need no lock: each call
builds its own generation state (transformers copies the generation config and makes a new cache per
``generate``), and the models, feature extractor and tokenizer are only read.

Audio longer than one window: on CUDA the pipeline cuts it into overlapping 30 s chunks decoded
``batch_size`` at a time (a GPU decodes a batch in about the time of one chunk). On CPU, or with
``batch_size`` 1, Whisper's own long-form ``generate`` decodes it window after window, each
conditioned on the previous text, as faster-whisper does: a CPU gains little from batching, and
the measured comparison is in results/transformers.json.

Speculative decoding (``assisted: true``) takes an assistant with the main model's tokenizer: a
decoder-only model sharing the main encoder (distil-whisper style, ``WhisperForCausalLM``) or a
smaller full Whisper. transformers' assisted generation needs batch size 1, so assisted requests
decode their windows one at a time, and the response says so.

The request's ``DecodeContext`` hears of every encoder call (a window, or a batch of chunks) through a
hook on the encoders, which is also where a decode is stopped; the total is an estimate (long-form
generate seeks as far as each window's text reaches). The segments come when the pipeline ends, in
one report: transformers returns no text before it has decoded every window.

Encoder windows are counted for the request's cost by a second hook (cost.py). Long-form ``generate``
seeks window after window inside transformers, where it cannot be stopped between windows: once the
request's window budget is spent a stopping rule ends each further decode at its first token, so the
windows left are encoded but not decoded (at most one per 30 s, which cost.py's budget keeps room for).
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from transformers import StoppingCriteria, StoppingCriteriaList

from whisper_endpoint.asr import cost, decoding_options, request_state, speech, tokens
from whisper_endpoint.asr.base import EngineSetup, check_language_options
from whisper_endpoint.asr.long_form import failed_windows, window_fallback
from whisper_endpoint.asr.transformers import confidence, output
from whisper_endpoint.asr.transformers.assistant import load_assistant
from whisper_endpoint.asr.transformers.features import WindowFeatureExtractor
from whisper_endpoint.asr.transformers.transformers_onsets import at_onsets
from whisper_endpoint.asr.word_times import word_edges, word_spread
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Transcript
from whisper_endpoint.weights.transformers_compat import (
    dtype_argument,
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

    def __init__(self, model_path: Path, setup: EngineSetup, assistant: tuple[Path, str | None] | None = None):
        """``assistant``: the assistant model's folder and the name it was asked by."""
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
        self.tokenizer = tokenizer
        if self.tokenizer.pad_token is None:  # batching pads with it; Whisper pads with <|endoftext|>
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.pipe = _asr_pipeline(self.model, tokenizer, features, device)
        self.word_pipe = _asr_pipeline(at_onsets(_eager_twin(self.model)), tokenizer, features, device)
        for pipe in (self.pipe, self.word_pipe):
            pipe.model.get_encoder().register_forward_pre_hook(_before_window, with_kwargs=True)
            pipe.model.get_encoder().register_forward_pre_hook(_count_windows, with_kwargs=True)
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
        if options.language is None and len(options.languages or ()) > 1:  # issue 58: ctranslate2 only
            warnings.append("a language per segment needs the ctranslate2 backend: the transformers backend decodes "
                            "the whole input in the one language it detects among 'languages'")
        with cost.counting(duration, strict=False, request_id=context.request_id) as counter:
            options, probability = self._with_language(samples, options)
            generate_kwargs = self._generate_kwargs(samples, options, warnings)
            request = _Request(samples, options, window_s, context, warnings, generate_kwargs)
            stop = _StopWhenSpent(counter)
            decoded, decoding, windows = self._run(request, stop)
            segments = output.segments(decoded, decoding.pop("timestamps"), duration)
            if options.return_timestamps == "word":  # word ends next to pauses, from the signal (issue 59)
                segments, counter.words_spread = word_spread.spread_missing(segments)  # decoded without them
                segments = word_edges.snapped(segments, samples)
            segments = self._confidence(request, segments, decoding)  # counted too
        warnings += _failed_notes(segments, window_s, decoding) + counter.notes + cost.spread_note(counter)
        context.report(windows.done, windows.total, segments)
        if stop.fired:
            reached = max((s.end for s in segments if s.text.strip()), default=0.0)
            warnings.append(cost.stopped_note(duration, reached))
        decoding.update(encoder_windows=counter.used, backend=self.name, model=self.model_name, device=self.device,
                        dtype=str(self.dtype).removeprefix("torch."))
        return Transcript(segments=segments, language=generate_kwargs.get("language", "en"),
                          language_probability=probability, decoding=decoding, warnings=warnings)

    def _run(self, request: _Request, stop: _StopWhenSpent):
        """The pipeline's run: its output, the ``decoding`` block so far, and the windows it reported."""
        samples, options, window_s = request.samples, request.options, request.window_s
        generate_kwargs, warnings = request.generate_kwargs, request.warnings
        long_audio = len(samples) > window_s * SAMPLE_RATE
        assisted = "assistant_model" in generate_kwargs
        # Assisted decoding has no timestamps (see _generate_kwargs), and long-form generate needs
        # them: assisted long audio is chunked, one chunk at a time.
        chunked = long_audio and (assisted or self._chunks_long_audio(options.batch_size))
        generate_kwargs.update(
            decoding_options.transformers_kwargs(options, long_form=long_audio and not chunked, warnings=warnings))
        batch_size = cost.batch_size(options, self.max_batch_size, warnings) if chunked and not assisted else 1
        if long_audio and assisted and options.batch_size != 1:
            warnings.append(
                f"assisted decoding runs at batch size 1 (batch_size {options.batch_size} was not used)"
            )
        timestamps = {"none": False, "segment": True, "word": "word"}[options.return_timestamps]
        if long_audio and not chunked:
            timestamps = timestamps or True  # long-form generate finds its windows with timestamp tokens
            generate_kwargs["stopping_criteria"] = StoppingCriteriaList([stop])
        windows = _Windows(request.context, _windows_total(len(samples) / SAMPLE_RATE, window_s if chunked else None))

        used = stop.counter.used

        def decode(attempt: tuple[str, object, dict]) -> tuple[dict, str]:
            kind, returned, kwargs = attempt
            pipe = self.word_pipe if kind == "word" else self.pipe
            # A try starts over: its windows, and its share of the bound, as the first try's (a failed try's
            # work is lost, and the bound stops runaway decoding, not a retry).
            windows.done, stop.counter.used = 0, used
            with windows.counting():
                return pipe({"raw": samples, "sampling_rate": SAMPLE_RATE},
                            chunk_length_s=window_s if chunked else None, batch_size=batch_size,
                            return_timestamps=returned, generate_kwargs=kwargs), kind

        output, kind = window_fallback.first_that_works(
            decode, _attempts(options.return_timestamps, timestamps, generate_kwargs),
            f"the input of {len(samples) / SAMPLE_RATE:.1f} s", stop.counter, given_up=({"text": ""}, "none"))
        decoding = {"mode": "chunked" if chunked else "sequential", "batch_size": batch_size, "assisted": assisted,
                    "timestamps": kind}
        if chunked:
            decoding["chunk_length_s"] = window_s
        return output, decoding, windows

    def _chunks_long_audio(self, batch_size: int) -> bool:
        """Chunked batches where they pay (a GPU with batch_size > 1), long-form generate elsewhere."""
        return self.device == "cuda" and batch_size > 1

    def _generate_kwargs(self, samples: np.ndarray, options: InferenceConfig, warnings: list[str]) -> dict:
        kwargs: dict = {"num_beams": options.beam_size}
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
            elif options.beam_size > 1:
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

    def _with_language(self, samples: np.ndarray, options: InferenceConfig) -> tuple[InferenceConfig, float | None]:
        """The options with the language set (detected when not given, multilingual models) and how sure
        the detection was (None when nothing was detected)."""
        if options.language is not None or not self.is_multilingual:
            return options, None
        language, probability = self._detect_language(samples, options)
        return options.model_copy(update={"language": language}), probability

    def _detect_language(self, samples: np.ndarray, options: InferenceConfig) -> tuple[str, float]:
        """Whisper's language detection on the first 30 s of speech (of audio with drop_non_speech: false),
        once for the whole input, and how sure it is.

        One language for all chunks, as faster-whisper does (and the pipeline's own per-chunk
        language output breaks its batching: IndexError with batch_size > 1).
        """
        import torch

        audio = speech.find_speech(samples).audio(samples) if options.drop_non_speech else samples
        window = audio[: self.pipe.feature_extractor.n_samples]
        features = self.pipe.feature_extractor(window, sampling_rate=SAMPLE_RATE, return_tensors="pt").input_features
        config = self.model.generation_config
        start = torch.tensor([[config.decoder_start_token_id]], device=self.device)
        with torch.inference_mode():
            logits = self.model(input_features=features.to(self.device, self.dtype), decoder_input_ids=start,
                                use_cache=False).logits[0, -1]
        ids = [i for token, i in config.lang_to_id.items()
               if not options.languages or token.strip("<|>") in options.languages]
        probabilities = torch.softmax(logits[ids].float(), dim=-1)
        best = int(probabilities.argmax())
        return self.tokenizer.convert_ids_to_tokens(ids[best]).strip("<|>"), float(probabilities[best])


class _Windows:
    """One request's windows, counted by the encoders' hook inside ``with windows.counting():``
    (this thread only: requests on other threads count their own)."""

    def __init__(self, context: DecodeContext, total: int):
        self.context, self.total, self.done = context, total, 0

    @contextmanager
    def counting(self):
        with request_state.opened(windows=self):
            yield


def _before_window(module, args, kwargs) -> None:
    """Encoder pre-hook: report the windows decoded so far (a stop asked for raises here), then count
    this call's windows. Calls outside a request's pipeline (language detection) are not counted."""
    state = request_state.current()
    windows = None if state is None else state.windows
    features = kwargs.get("input_features", args[0] if args else None)
    if windows is None or features is None:
        return
    windows.context.report(windows.done, windows.total)
    windows.done += features.shape[0]


def _count_windows(module, args, kwargs) -> None:
    """Encoder pre-hook: every call encodes a batch of 30 s windows, counted for the request's cost."""
    features = kwargs.get("input_features", args[0] if args else None)
    if features is not None:
        cost.count(features.shape[0])


class _StopWhenSpent(StoppingCriteria):
    """Ends a decode at once when the request's window budget is spent (long-form generate)."""

    def __init__(self, counter: cost.WindowCounter):
        self.counter, self.fired = counter, False

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        spent = self.counter.used > self.counter.budget
        self.fired = self.fired or spent
        return torch.full((input_ids.shape[0],), spent, dtype=torch.bool, device=input_ids.device)


def _windows_total(duration: float, chunk_length_s: float | None) -> int:
    """Windows the pipeline will encode: 30 s each for long-form generate (more when a window's text
    stops early), or the chunked pipeline's chunks (a sixth of a chunk overlaps on each side)."""
    if chunk_length_s is None:
        return max(1, math.ceil(duration / 30))
    step = chunk_length_s * 2 / 3
    return 1 + max(0, math.ceil((duration - chunk_length_s) / step))


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


def _failed_notes(segments: list[Segment], window_s: float, decoding: dict) -> list[str]:
    """Stretches of the transcript that fail the repetition check (failed_windows.py), said in the response:
    this backend does not decode them again (the ctranslate2 backend does, issue 57)."""
    failed = failed_windows.failed_stretches(segments, window_s)
    decoding.update(windows_decoded_again=0, windows_not_recovered=len(failed))
    return [f"the transcript from {start:.1f} s to {end:.1f} s failed ({why}) and was not decoded again (the "
            "transformers backend does not; the ctranslate2 backend does): its text may repeat or miss words"
            for start, end, why in failed]


def _attempts(asked: str, timestamps, generate_kwargs: dict) -> list[tuple[str, tuple]]:
    """The pipeline's tries (window_fallback.py): as asked, then without word times, then greedy; each
    (what it is, (the timestamps it gives, the pipeline's return_timestamps, generate's options))."""
    plain = ("segment" if asked == "word" else asked, True if timestamps == "word" else timestamps, generate_kwargs)
    greedy = (*plain[:2], {**generate_kwargs, "num_beams": 1})
    tries = [("as asked", (asked, timestamps, generate_kwargs)), ("without word times", plain),
             ("greedy without word times", greedy)]
    return [(how, attempt) for index, (how, attempt) in enumerate(tries)
            if all(attempt != earlier for _, earlier in tries[:index])]
