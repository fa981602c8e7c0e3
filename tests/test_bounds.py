"""Bounded cost (#17): a request's encoder windows are counted, reported and bounded by its audio length
whatever its parameters; Whisper's token budget is shared by the prompt and the transcript, never a 500.

The same, on the transformers backend, is in test_transformers_backend.py (its model is loaded there).
"""

import numpy as np
import pytest

from support.audio import clip_refs, decode_reference, read_clip
from support.metrics import normalize, wer
from support.paths import CLIPS
from whisper_endpoint.asr import cost, tokens
from whisper_endpoint.asr.long_form.windows import Window
from whisper_endpoint.core.config import InferenceConfig, ModelSettings
from whisper_endpoint.core.device import DEFAULT_MAX_BATCH_SIZE
from whisper_endpoint.core.errors import InvalidParameterError

NAMES = sorted(clip_refs())[:12]
CLIP = "asterisk_vm-next.flac"
LONG_PROMPT = ("Minutes of the meeting about the voicemail system, its menus and the conference bridge. " * 30)[:2000]


@pytest.fixture(scope="module")
def long_audio() -> dict:
    """56 s: twelve clips with half-second pauses, more than one window."""
    gap = np.zeros(8000, dtype=np.float32)
    samples = np.concatenate([part for name in NAMES for part in (decode_reference(CLIPS / name), gap)])
    return {"array": samples, "sampling_rate": 16000}


@pytest.fixture(scope="module")
def default_run(tiny_handler, long_audio) -> dict:
    return tiny_handler({"inputs": long_audio})


def _duration(audio: dict) -> float:
    return len(audio["array"]) / audio["sampling_rate"]


def test_windows_are_counted_and_within_the_bound(default_run, long_audio):
    decoding = default_run["decoding"]
    # 56 s of speech in windows of at most 30 s: two batched windows, plus the remainders decoded again.
    assert decoding["encoder_windows"] == 2 + decoding["remainders_decoded_again"]
    assert decoding["encoder_windows"] <= cost.window_budget(_duration(long_audio))
    assert wer([" ".join(clip_refs()[n] for n in NAMES)], [default_run["text"]]) < 0.15


def test_short_windows_and_huge_batches_do_not_multiply_the_work(tiny_handler, long_audio):
    result = tiny_handler({"inputs": long_audio, "parameters": {"chunk_length_s": 1, "batch_size": 256}})
    # chunk_length_s 1 packed 1 s windows before: one 30 s encoder pass per second of speech (~50 here).
    assert result["decoding"]["encoder_windows"] <= cost.window_budget(_duration(long_audio)) == 10
    assert result["decoding"]["chunk_length_s"] == cost.MIN_WINDOW_S
    cap = DEFAULT_MAX_BATCH_SIZE[tiny_handler.asr.device]
    assert result["decoding"]["batch_size"] == cap
    assert any("chunk_length_s 1 was raised to 15" in w for w in result["warnings"])
    assert any(f"batch_size 256 was lowered to {cap}" in w and "MAX_BATCH_SIZE" in w for w in result["warnings"])
    assert wer([" ".join(clip_refs()[n] for n in NAMES)], [result["text"]]) < 0.15


def test_default_batch_size_is_capped_silently(tiny_handler, default_run):
    assert default_run["decoding"]["batch_size"] == DEFAULT_MAX_BATCH_SIZE[tiny_handler.asr.device]
    assert default_run["warnings"] == []


def test_max_batch_size_setting(monkeypatch):
    monkeypatch.setenv("MAX_BATCH_SIZE", "4")
    assert ModelSettings().max_batch_size == 4
    monkeypatch.setenv("MAX_BATCH_SIZE", "0")
    with pytest.raises(ValueError, match="max_batch_size"):
        ModelSettings()


def test_remainders_past_the_budget_are_skipped_and_said(tiny_handler, long_audio, default_run, monkeypatch):
    assert default_run["decoding"]["remainders_decoded_again"] >= 1
    monkeypatch.setattr(cost, "WINDOWS_PER_30S", 1)  # budget 2 for 56 s: the two batched windows only
    monkeypatch.setattr(cost, "EXTRA_WINDOWS", 0)
    result = tiny_handler({"inputs": long_audio})
    assert result["decoding"]["encoder_windows"] == 2 and result["decoding"]["remainders_decoded_again"] == 0
    assert any("window remainders were not decoded again" in w for w in result["warnings"])


def test_the_sequential_decoder_stops_at_the_budget_and_says_so(base_handler, monkeypatch):
    # Language detection reads the window the decoding encodes (no window of its own): a budget of one
    # decodes the clip, so none is left for the sequential decoder's first window here.
    monkeypatch.setattr(cost, "WINDOWS_PER_30S", 0)
    monkeypatch.setattr(cost, "EXTRA_WINDOWS", 0)
    result = base_handler({"inputs": read_clip(CLIP), "parameters": {"language": "en"}})
    assert result["decoding"]["encoder_windows"] == 0 and result["text"] == ""
    assert any("decoding stopped at this request's bound of 0 encoder windows" in w for w in result["warnings"])


# --- the token budget ---------------------------------------------------------------------------------


def test_a_long_prompt_is_trimmed_to_whispers_budget_and_said(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP), "parameters": {"initial_prompt": LONG_PROMPT}})
    assert normalize(result["text"]) == normalize(clip_refs()[CLIP])
    assert any("Whisper uses its last 223" in w and "448" in w for w in result["warnings"])


def test_control_token_text_in_the_prompt_is_a_422(tiny_handler):
    with pytest.raises(InvalidParameterError, match="initial_prompt contains '<\\|endoftext\\|>'") as info:
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"initial_prompt": "hello <|endoftext|> there"}})
    assert info.value.status == 422


@pytest.mark.parametrize("hotwords", [None, "Asterisk ConfBridge voicemail " * 5, LONG_PROMPT[:1000]])
def test_a_long_remainder_after_the_longest_prompt_fits_the_decoder(tiny_handler, long_audio, hotwords):
    """The second pass over a window's remainder: 29 s of speech after a full 223-token prompt raised
    faster-whisper's ValueError (prompt + token cap over 448), a 500 after the batched pass was paid.
    Hotwords share the prompt's budget: with them, the prompt keeps fewer of its last tokens."""
    asr = tiny_handler.asr
    warnings = []
    prompts = asr._prompts(InferenceConfig(initial_prompt=LONG_PROMPT, hotwords=hotwords), warnings)
    tokenizer = asr.model.hf_tokenizer
    used = sum(len(tokenizer.encode(" " + text.strip(), add_special_tokens=False).ids)
               for text in prompts.values() if text)
    assert used == tokens.prompt_budget(asr.model.max_length) == 223 and warnings
    audio = long_audio["array"][: 30 * 16000]
    kwargs = dict(language="en", task="transcribe", beam_size=1, word_timestamps=False, without_timestamps=False,
                  **prompts)
    from whisper_endpoint.asr.ctranslate2.decode_state import DecodeState
    from whisper_endpoint.core.decode_context import DecodeContext

    state = DecodeState(asr.model, audio, InferenceConfig(), kwargs, DecodeContext(), cost.WindowCounter(100))
    segments = state._decode_alone(audio, Window(1.0, 30.0), kwargs)
    assert segments and all(1.0 <= s.start <= s.end <= 30.5 for s in segments)


@pytest.mark.slow  # the costliest decoding the parameters allow: beam 10 under the longest prompt
def test_extreme_parameter_combinations_are_answered(tiny_handler):
    clip = read_clip(CLIP)
    for parameters in (
        {"chunk_length_s": 1, "batch_size": 256, "beam_size": 10, "return_timestamps": "word",
         "initial_prompt": LONG_PROMPT, "vad_filter": True, "assisted": True},
        {"chunk_length_s": 30, "batch_size": 1, "return_timestamps": "none", "initial_prompt": LONG_PROMPT,
         "recover_dropped_speech": False},
    ):
        result = tiny_handler({"inputs": clip, "parameters": parameters})
        assert "next message" in normalize(result["text"])  # such a prompt may add words; it is answered
        assert result["decoding"]["encoder_windows"] <= cost.window_budget(result["duration"])
