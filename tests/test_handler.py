"""The Inference Endpoints contract end to end, on the real embedded tiny.en model."""

import base64
import json

import numpy as np
import pytest

from support.audio import clip_refs, decode_reference, encode, read_clip
from support.metrics import normalize, wer
from support.paths import CLIPS
from whisper_endpoint.core.errors import (
    EmptyAudioError,
    InvalidInputError,
    InvalidParameterError,
    MissingInputError,
    UndecodableAudioError,
    UnsupportedOptionError,
)

CLIP = "asterisk_vm-next.flac"


@pytest.mark.slow  # the same request three ways
def test_base64_bytes_and_array_inputs_agree(tiny_handler):
    data = read_clip(CLIP)
    as_b64 = tiny_handler({"inputs": base64.b64encode(data).decode()})
    as_bytes = tiny_handler({"inputs": data})
    as_array = tiny_handler({"inputs": {"array": decode_reference(CLIPS / CLIP).tolist(), "sampling_rate": 16000}})
    assert normalize(as_b64["text"]) == normalize(clip_refs()[CLIP])
    assert as_b64["text"] == as_bytes["text"] == as_array["text"]


def test_response_shape_is_the_reference_contract_and_json_serialisable(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP), "parameters": {"unknown_knob": 1}})
    json.dumps(result)
    assert set(result) >= {"text", "chunks", "speakers", "language", "duration", "warnings"}
    assert result["speakers"] == [] and result["language"] == "en"
    assert result["warnings"] == ["ignored unknown parameter 'unknown_knob'"]
    assert result["decoding"]["mode"] == "sequential"
    for chunk in result["chunks"]:
        start, end = chunk["timestamp"]
        assert 0 <= start <= end <= result["duration"]
    assert "".join(c["text"] for c in result["chunks"]).strip() == result["text"]


def test_array_at_another_rate_transcribes_like_the_file(tiny_handler):
    samples = decode_reference(CLIPS / CLIP)
    rate = 44100
    upsampled = np.interp(np.arange(0, len(samples), 16000 / rate), np.arange(len(samples)), samples)
    result = tiny_handler({"inputs": {"array": upsampled.tolist()}, "parameters": {"sampling_rate": rate}})
    assert abs(result["duration"] - len(samples) / 16000) < 0.01
    assert normalize(result["text"]) == normalize(clip_refs()[CLIP])


def test_sampling_rate_with_a_file_is_reported_not_applied(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP), "parameters": {"sampling_rate": 8000}})
    assert normalize(result["text"]) == normalize(clip_refs()[CLIP])
    assert any("array inputs only" in warning for warning in result["warnings"])


def test_speaker_options_without_diarization_are_reported(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP), "parameters": {"num_speakers": 2, "return_speaker_turns": True}})
    assert result["speakers"] == [] and "speaker_turns" not in result
    assert any("DIARIZATION_MODEL" in w and "num_speakers" in w for w in result["warnings"])


def test_word_timestamps_are_words_in_order(tiny_handler):
    result = tiny_handler({"inputs": read_clip("asterisk_conf-adminmenu-162.flac"), "parameters": {"return_timestamps": "word"}})
    starts = [chunk["timestamp"][0] for chunk in result["chunks"]]
    assert len(result["chunks"]) == len(result["text"].split())
    assert starts == sorted(starts)
    assert all(start <= end for start, end in (chunk["timestamp"] for chunk in result["chunks"]))


def test_no_timestamps_gives_text_only(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP), "parameters": {"return_timestamps": False}})
    assert result["chunks"] == [] and normalize(result["text"]) == normalize(clip_refs()[CLIP])


@pytest.mark.slow  # long audio, batched windows
def test_long_audio_takes_the_batched_path(tiny_handler):
    names = sorted(clip_refs())[:6]
    gap = np.zeros(8000, dtype=np.float32)
    samples = np.concatenate([part for name in names for part in (decode_reference(CLIPS / name), gap)])
    assert len(samples) > 30 * 16000
    result = tiny_handler({"inputs": encode(samples, 16000, "flac", "flac"), "parameters": {"batch_size": 4}})
    assert result["decoding"]["mode"] == "batched" and result["decoding"]["batch_size"] == 4
    assert wer([" ".join(clip_refs()[n] for n in names)], [result["text"]]) < 0.15
    ends = [chunk["timestamp"][1] for chunk in result["chunks"]]
    assert ends == sorted(ends) and ends[-1] <= result["duration"]


def test_vad_filter_and_initial_prompt_and_beam_search_run(tiny_handler):
    result = tiny_handler({"inputs": read_clip(CLIP),
                           "parameters": {"vad_filter": True, "initial_prompt": "Voicemail menu.", "beam_size": 3}})
    assert normalize(result["text"]) == normalize(clip_refs()[CLIP])


@pytest.mark.slow  # ten clips decoded
def test_quality_on_ten_clips(tiny_handler):
    names = sorted(clip_refs())[:10]
    hyps = [tiny_handler({"inputs": read_clip(name)})["text"] for name in names]
    assert wer([clip_refs()[n] for n in names], hyps) < 0.08  # tiny.en scores 3.1% on all 30


# Bad input: one test per documented error.

def test_missing_inputs(tiny_handler):
    with pytest.raises(MissingInputError, match="no 'inputs'") as info:
        tiny_handler({"parameters": {}})
    assert info.value.status == 400


def test_invalid_base64(tiny_handler):
    with pytest.raises(InvalidInputError, match="not valid base64") as info:
        tiny_handler({"inputs": "this is not base64!!"})
    assert info.value.status == 400


def test_bytes_that_are_not_audio(tiny_handler):
    with pytest.raises(UndecodableAudioError, match="not a decodable audio file") as info:
        tiny_handler({"inputs": base64.b64encode(b"%PDF-1.4 not audio at all" * 10).decode()})
    assert info.value.status == 415


def test_empty_audio(tiny_handler):
    with pytest.raises(EmptyAudioError, match="empty"):
        tiny_handler({"inputs": b""})


def test_zero_length_array(tiny_handler):
    with pytest.raises(EmptyAudioError, match="zero-length"):
        tiny_handler({"inputs": {"array": [], "sampling_rate": 16000}})


def test_wrong_parameter_type(tiny_handler):
    with pytest.raises(InvalidParameterError, match="parameters.beam_size") as info:
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"beam_size": "wide"}})
    assert info.value.status == 422


def test_parameter_out_of_range(tiny_handler):
    with pytest.raises(InvalidParameterError, match="parameters.batch_size"):
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"batch_size": -3}})


def test_min_speakers_above_max(tiny_handler):
    with pytest.raises(InvalidParameterError, match="min_speakers must be smaller"):
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"min_speakers": 3, "max_speakers": 1}})


def test_unknown_language(tiny_handler):
    with pytest.raises(InvalidParameterError, match="unknown language 'elvish'"):
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"language": "elvish"}})


def test_translate_with_english_only_model(tiny_handler):
    with pytest.raises(UnsupportedOptionError, match="English-only") as info:
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"task": "translate"}})
    assert info.value.status == 400


def test_other_language_with_english_only_model(tiny_handler):
    with pytest.raises(UnsupportedOptionError, match="'ja' needs a multilingual model"):
        tiny_handler({"inputs": read_clip(CLIP), "parameters": {"language": "japanese"}})


@pytest.mark.parametrize("payload", [None, "just a string", [1, 2]])
def test_request_that_is_not_an_object(tiny_handler, payload):
    with pytest.raises(InvalidInputError, match="must be an object"):
        tiny_handler(payload)


def test_inputs_of_the_wrong_type(tiny_handler):
    with pytest.raises(InvalidInputError, match="base64 string, raw bytes"):
        tiny_handler({"inputs": 12345})


def test_handler_keeps_working_after_errors(tiny_handler):
    for bad in ({"inputs": "%%%"}, {"inputs": b"junk"}, {}):
        with pytest.raises(Exception):
            tiny_handler(bad)
    assert normalize(tiny_handler({"inputs": read_clip(CLIP)})["text"]) == normalize(clip_refs()[CLIP])


def test_japanese_with_the_multilingual_base_model(base_handler):
    from support.paths import AUDIO

    meeting = json.loads((AUDIO / "ja" / "kokoro_ja_meeting.json").read_text())
    reference = "".join(turn["text"] for turn in meeting["turns"])
    data = (AUDIO / "ja" / "kokoro_ja_meeting.flac").read_bytes()
    # Detected, not given: a language given by name decodes the same (tests/test_parameters.py maps the names).
    detected = base_handler({"inputs": data, "parameters": {"return_timestamps": "none"}})
    from support.metrics import cer

    assert detected["language"] == "ja"
    # CER measured 14.2% here (int8, 1 or 2 threads), 13.1% with float32 and on the development machine: the
    # kernels differ between CPUs and compute types. Each bound sits twice its measured spread above the
    # highest measure.
    assert cer([reference], [detected["text"]]) < 0.165
    assert "アプリの公開" in detected["text"]
    # With timestamps the batched decoder stops a window early on this meeting (faster-whisper 1.2.1 drops
    # "テストが順調なら": a precondition, asserted, so the recovery check below cannot pass by default); the
    # second pass over that window's remainder (asr/long_form/windows.py) keeps it. CER with it 10.9% (int8) to
    # 13.1% (float32), without it 14.8% to 16.9%.
    stamped = {recover: base_handler({"inputs": data, "parameters": {"language": "ja", "recover_dropped_speech": recover}})
               for recover in (True, False)}
    assert stamped[False]["decoding"]["remainders_decoded_again"] == 0 and "順調" not in stamped[False]["text"]
    assert stamped[True]["decoding"]["remainders_decoded_again"] >= 1 and "順調" in stamped[True]["text"]
    assert cer([reference], [stamped[True]["text"]]) < min(0.175, cer([reference], [stamped[False]["text"]]))
