"""Core B: converted real weights on the transformers backend, timestamps and speculative decoding.

Speculative decoding is lossless whatever the assistant proposes (the main model verifies every
token), so randomly initialised assistants of both kinds must reproduce the unassisted greedy text.
"""

import json
import shutil

import numpy as np
import pytest

from support.audio import clip_refs, read_clip
from support.metrics import normalize
from support.paths import CLIPS
from whisper_endpoint.asr import cost
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.core.decode_context import DecodeContext, DecodeStopped
from whisper_endpoint.core.errors import (
    InvalidParameterError,
    ModelLoadError,
    UnsupportedOptionError,
)
from whisper_endpoint.weights import embedded
from whisper_endpoint.weights.convert import converted_model_dir

THREE = ["asterisk_vm-next.flac", "asterisk_transfer.flac", "asterisk_conf-invalidpin.flac"]


def _converted(settings_factory, name):
    cache = settings_factory().model_cache_dir
    return converted_model_dir(embedded.assemble(embedded.MODELS[name], cache), cache)


def test_window_features_equal_faster_whisper_features(settings_factory):
    from faster_whisper.feature_extractor import FeatureExtractor

    from whisper_endpoint.asr.transformers.features import WindowFeatureExtractor

    ours_fe = WindowFeatureExtractor.from_pretrained(_converted(settings_factory, "tiny.en"))
    for name in THREE:
        audio = decode_file(read_clip(name), max_seconds=60).samples
        ours = ours_fe(audio, sampling_rate=16000, return_tensors="np", return_attention_mask=True)
        speech = FeatureExtractor()(audio)[:, : len(audio) // 160]  # faster-whisper's content frames
        assert ours["input_features"].shape == (1, 80, 3000)
        np.testing.assert_allclose(ours["input_features"][0, :, : speech.shape[1]], speech, atol=1e-4)
        assert not ours["input_features"][0, :, speech.shape[1]:].any()
        assert ours["attention_mask"].sum() == speech.shape[1]


@pytest.mark.slow  # thirty clips on both backends
def test_converted_tiny_en_matches_faster_whisper_greedy(tiny_tf):
    from faster_whisper import WhisperModel

    raw = WhisperModel(str(embedded.model_dir(tiny_tf.settings.model_cache_dir, embedded.MODELS["tiny.en"])),
                       device="cpu", compute_type="float32")
    for name in THREE:
        ours = tiny_tf({"inputs": read_clip(name), "parameters": {"return_timestamps": "none"}})
        segments, _ = raw.transcribe(str(CLIPS / name), beam_size=1, without_timestamps=True)
        assert ours["text"] == "".join(s.text for s in segments).strip()
        assert ours["decoding"]["backend"] == "transformers"
        assert ours["decoding"]["encoder_windows"] == 1  # English-only: no language detection


def test_word_timestamps_from_alignment_heads(tiny_tf):
    result = tiny_tf({"inputs": read_clip(THREE[0]), "parameters": {"return_timestamps": "word"}})
    words = result["chunks"]
    assert len(words) == len(result["text"].split())
    assert "".join(w["text"] for w in words).strip() == result["text"]
    starts = [w["timestamp"][0] for w in words]
    assert starts == sorted(starts) and all(s <= e <= result["duration"] for s, e in (w["timestamp"] for w in words))
    assert words[-1]["timestamp"][1] > 0.5 * result["duration"]  # spread over the clip, not bunched at 0
    assert tiny_tf.asr.model.config._attn_implementation == tiny_tf.asr.attention  # never switched: the twin ran


def _joined(names, pause_s=1.0):
    pause = np.zeros(int(16000 * pause_s), np.float32)
    return np.concatenate([np.concatenate([decode_file(read_clip(n), max_seconds=60).samples, pause]) for n in names])


@pytest.fixture(scope="module")
def long_audio():
    """Over 30 s (its speech, packed, fits one window)."""
    audio = _joined(THREE * 3)
    assert len(audio) > 30 * 16000
    return audio


@pytest.fixture(scope="module")
def two_windows():
    """Speech for two windows."""
    return _joined(THREE * 6)


@pytest.mark.parametrize("timestamps", ["none", "segment", "word"])
def test_long_audio_is_decoded_in_windows_of_packed_speech(tiny_tf, long_audio, timestamps):
    result = tiny_tf({"inputs": {"array": long_audio, "sampling_rate": 16000},
                      "parameters": {"return_timestamps": timestamps}})
    decoding = result["decoding"]
    assert decoding["mode"] == "batched" and decoding["batch_size"] == 1 and decoding["segmentation"] == "vad"
    assert not any("after an error" in w for w in result["warnings"])  # no window decoded the plain way
    # Each of the three clips is said three times: every window was decoded, none dropped at a seam.
    assert result["text"].lower().count("next message") >= 3
    if timestamps != "none":
        ends = [chunk["timestamp"][1] for chunk in result["chunks"]]
        assert ends == sorted(ends) and ends[-1] > 30
        assert [c["timestamp"][0] for c in result["chunks"]] == sorted(c["timestamp"][0] for c in result["chunks"])
    if timestamps == "none":  # the window whole: the same three clips three times compress as a loop's text
        # does, on either engine, and the window is decoded again in pieces (recovery.py), which say it again
        assert decoding["windows_decoded_again"] == 1 and decoding["encoder_windows"] <= 6


def test_long_audio_reports_each_window_and_stops_at_the_next_when_cancelled(tiny_tf, two_windows):
    """Cancelled once the first window is reported decoded, the decode stops before the second window."""
    reports = []

    def cancel_after_the_first(progress):
        reports.append((progress.windows_done, progress.windows_total))
        if progress.windows_done == 1:
            context.cancel("disconnected")

    context = DecodeContext(listeners=(cancel_after_the_first,))
    with pytest.raises(DecodeStopped) as stopped:
        tiny_tf.run({"inputs": {"array": two_windows, "sampling_rate": 16000},
                     "parameters": {"return_timestamps": "segment", "beam_size": 1}}, context)
    assert stopped.value.reason == "disconnected" and reports == [(0, 2), (1, 2)]


def test_long_audio_batches_windows_where_they_pay(tiny_tf, long_audio, monkeypatch):
    """The GPU path (windows batched) on this CPU: same contract, batch size as asked."""
    monkeypatch.setattr(tiny_tf.asr, "_batches_pay", lambda: True)
    result = tiny_tf({"inputs": {"array": long_audio, "sampling_rate": 16000},
                      "parameters": {"batch_size": 2, "return_timestamps": "segment"}})
    assert result["decoding"]["mode"] == "batched" and result["decoding"]["batch_size"] == 2
    assert result["text"].lower().count("next message") >= 3 and result["chunks"][-1]["timestamp"][1] > 30
    assert result["decoding"]["encoder_windows"] <= cost.window_budget(len(long_audio) / 16000)


def test_long_audio_stops_decoding_when_the_window_budget_is_spent(tiny_tf, two_windows, monkeypatch):
    monkeypatch.setattr(cost, "WINDOWS_PER_30S", 0)  # a bound of one window for this audio's two
    monkeypatch.setattr(cost, "EXTRA_WINDOWS", 1)
    result = tiny_tf({"inputs": {"array": two_windows, "sampling_rate": 16000},
                      "parameters": {"return_timestamps": "segment", "beam_size": 1}})
    assert result["decoding"]["encoder_windows"] == 1 and "next message" in result["text"].lower()
    assert result["chunks"][-1]["timestamp"][1] < 0.6 * len(two_windows) / 16000  # the first window only
    assert any("decoding stopped at this request's bound of 1 encoder windows" in w for w in result["warnings"])


def test_prompt_over_the_token_budget_is_trimmed_and_control_tokens_refused(tiny_tf):
    prompt = ("Minutes of the meeting about the voicemail system, its menus and the bridge. " * 30)[:2000]
    result = tiny_tf({"inputs": read_clip(THREE[0]), "parameters": {"initial_prompt": prompt}})
    # The whole prompt left 40-odd tokens for the transcript, which came out as the prompt's words.
    assert normalize(result["text"]) == normalize(clip_refs()[THREE[0]])
    assert any("Whisper uses its last 223" in w for w in result["warnings"])
    with pytest.raises(InvalidParameterError, match="initial_prompt contains '<\\|endoftext\\|>'"):
        tiny_tf({"inputs": read_clip(THREE[0]), "parameters": {"initial_prompt": "so <|endoftext|>"}})


def test_english_only_model_refuses_translate(tiny_tf):
    with pytest.raises(UnsupportedOptionError, match="English-only"):
        tiny_tf({"inputs": read_clip(THREE[0]), "parameters": {"task": "translate"}})


def _random_assistant(main_dir, out_dir, *, decoder_only: bool):
    """A randomly initialised assistant speaking the main model's tokens: lossless decoding must not care."""
    import torch
    from transformers import (
        WhisperConfig,
        WhisperForCausalLM,
        WhisperForConditionalGeneration,
    )

    torch.manual_seed(0)
    config = WhisperConfig.from_pretrained(main_dir)
    if decoder_only:  # distil-whisper style: reuses the main encoder, so it keeps its d_model
        config.update({"decoder_layers": 1, "is_encoder_decoder": False, "architectures": ["WhisperForCausalLM"]})
        model = WhisperForCausalLM(config)
    else:  # a smaller full Whisper with its own encoder
        config.update({"d_model": 64, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
                       "decoder_attention_heads": 2, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128})
        model = WhisperForConditionalGeneration(config)
    model.generation_config = model.generation_config.from_pretrained(main_dir)
    model.save_pretrained(out_dir)
    for name in ("tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"):
        shutil.copy(main_dir / name, out_dir / name)
    return out_dir


@pytest.mark.parametrize("decoder_only", [True, False], ids=["decoder-only", "full-whisper"])
def test_assisted_greedy_equals_unassisted_with_random_assistant(settings_factory, tmp_path, decoder_only):
    from whisper_endpoint.handler import EndpointHandler

    assistant = _random_assistant(_converted(settings_factory, "base"), tmp_path, decoder_only=decoder_only)
    handler = EndpointHandler(settings=settings_factory(asr_model="embedded:base", assistant_model=str(assistant)))
    # The text is the same whether the assistant runs or not (the main model verifies every token), and
    # "assisted" in the response is what was asked: the assistant's own forward passes say whether it ran.
    drafts = []
    handler.asr.assistant.register_forward_hook(lambda *_: drafts.append(1))
    for name in THREE:
        params = {"return_timestamps": "none", "language": "en"}
        plain = handler({"inputs": read_clip(name), "parameters": params})
        assert drafts == []
        assisted = handler({"inputs": read_clip(name), "parameters": {**params, "assisted": True}})
        assert len(drafts) > 0
        drafts.clear()
        assert assisted["decoding"]["assisted"] and not plain["decoding"]["assisted"]
        assert assisted["text"] == plain["text"]
    if decoder_only:  # the multilingual model detects the language on the speech, not on a noisy start
        from support.nonspeech import noise

        clip = decode_file(read_clip(THREE[0]), max_seconds=60).samples
        samples = np.concatenate([noise(25, 1, -25), clip]).astype(np.float32)
        detected = handler({"inputs": {"array": samples, "sampling_rate": 16000},
                            "parameters": {"return_timestamps": "none"}})
        assert detected["language"] == "en" and detected["language_probability"] > 0.5
    if decoder_only:  # audio longer than a window: assisted windows go one at a time, and it says so
        long = handler({"inputs": read_clip("asterisk_conf-adminmenu-162.flac"),
                        "parameters": {"assisted": True, "chunk_length_s": 10, "batch_size": 4, "language": "en",
                                       "return_timestamps": "none"}})
        assert long["decoding"]["mode"] == "batched" and long["decoding"]["batch_size"] == 1
        assert long["decoding"]["assisted"]
        assert any("batch size 1" in w for w in long["warnings"]) and long["text"]
    else:  # timestamps: unassisted, and said so (the assisted text can differ there)
        stamped = handler({"inputs": read_clip(THREE[0]),
                           "parameters": {"assisted": True, "language": "en", "return_timestamps": "segment"}})
        assert not stamped["decoding"]["assisted"] and any("timestamps" in w for w in stamped["warnings"])


def test_assistant_with_another_tokenizer_is_refused_at_load(settings_factory):
    from whisper_endpoint.handler import EndpointHandler

    with pytest.raises(ModelLoadError, match="same tokenizer"):
        EndpointHandler(settings=settings_factory(asr_model="embedded:base", assistant_model="embedded:tiny.en"))


def test_converted_generation_config_carries_whisper_ids(settings_factory):
    config = json.loads((_converted(settings_factory, "base") / "generation_config.json").read_text())
    assert config["is_multilingual"] and config["lang_to_id"]["<|ja|>"] == 50266
    assert config["task_to_id"] == {"transcribe": 50359, "translate": 50358}
    assert len(config["alignment_heads"]) == 8 and config["suppress_tokens"]


@pytest.mark.slow  # base on transformers, float32, word times over two windows
def test_word_times_on_long_audio_decode_each_window_as_asked(base_tf):
    """Decoded once per window, base's token times missed a window's last tokens (IndexError in the
    pipeline): every window then went the plain way, alone, decoded twice. With word times generate seeks on."""
    from support.paths import AUDIO

    result = base_tf({"inputs": (AUDIO / "word_times" / "kal16_tune_1.flac").read_bytes(),
                      "parameters": {"return_timestamps": "word"}})
    assert result["decoding"]["mode"] == "batched" and result["chunks"]
    assert not any("after an error" in w for w in result["warnings"]), result["warnings"]
