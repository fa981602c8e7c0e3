"""No words over silence, noise or music (``drop_non_speech``, on by default): both backends, short and
long audio, real models on synthesized non-speech (scripts/nonspeech_corpus.py's recipes)."""

import numpy as np
import pytest

from support.audio import read_clip
from support.nonspeech import band_music, noise
from whisper_endpoint.asr.speech import Speech
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.types import Segment, Word
from whisper_endpoint.pipeline.asr_step import NO_SPEECH_MODE, over_speech

RATE = 16000


def _array(samples: np.ndarray) -> dict:
    return {"array": samples.astype(np.float32), "sampling_rate": RATE}


def _assert_no_words(result: dict) -> None:
    assert result["text"] == "" and result["chunks"] == [] and result["speakers"] == []
    assert any(w.startswith("no speech found") for w in result["warnings"])
    assert result["decoding"]["mode"] == NO_SPEECH_MODE


@pytest.mark.parametrize("samples", [
    pytest.param(np.zeros(30 * RATE), id="30 s digital silence (short: one window)"),
    pytest.param(noise(40, 1, -25), id="40 s pink noise (long: batched)"),
    pytest.param(band_music(35), id="35 s of music"),
])
def test_non_speech_gives_no_words_on_ctranslate2(tiny_handler, samples):
    _assert_no_words(tiny_handler({"inputs": _array(samples), "parameters": {"return_timestamps": "word"}}))


def test_drop_non_speech_false_decodes_as_before(tiny_handler):
    result = tiny_handler({"inputs": _array(np.zeros(10 * RATE)), "parameters": {"drop_non_speech": False}})
    assert result["decoding"]["mode"] == "sequential"
    assert not any(w.startswith("no speech found") for w in result["warnings"])


@pytest.mark.parametrize("samples", [
    pytest.param(noise(30, 1, -25), id="30 s pink noise (short)"),
    pytest.param(np.concatenate([band_music(20), np.zeros(15 * RATE)]), id="music then silence (long)"),
])
def test_non_speech_gives_no_words_on_transformers(tiny_tf, samples):
    _assert_no_words(tiny_tf({"inputs": _array(samples)}))


@pytest.mark.slow  # a long noise decoded
def test_words_only_over_the_speech_after_a_long_noise(tiny_tf):
    """Long audio, a window of pink noise then one with speech: the noise's window gave words of its own."""
    clip = decode_file(read_clip("asterisk_transfer.flac"), max_seconds=60).samples
    reported = []
    context = DecodeContext(listeners=(lambda progress: reported.append(progress.segments),))
    result = tiny_tf.run({"inputs": _array(np.concatenate([noise(31, 1, -25), clip, np.zeros(RATE)]))}, context)
    assert result["text"] == "Please hold while I try that extension."
    assert result["chunks"][0]["timestamp"][0] >= 29.0
    # What progress shows (streamed text, issue 20) is filtered alike: never words the response drops.
    assert reported and "".join(s.text for s in reported[-1]).strip() == result["text"]


def test_silence_with_diarization_gives_no_words_and_no_speakers(diarizing_handler):
    result = diarizing_handler({"inputs": _array(np.zeros(20 * RATE)), "parameters": {"return_speaker_turns": True}})
    _assert_no_words(result)
    assert result["speaker_turns"] == []


def test_language_is_detected_on_the_speech_with_its_probability(base_handler):
    """A multilingual model, 25 s of pink noise then an English prompt: the noise alone is "detected" as
    some language (Norwegian Nynorsk for base); the speech decides, and says how sure it is."""
    clip = decode_file(read_clip("asterisk_transfer.flac"), max_seconds=60).samples
    result = base_handler({"inputs": _array(np.concatenate([noise(25, 1, -25), clip]))})
    assert result["language"] == "en" and result["language_probability"] > 0.5
    named = base_handler({"inputs": _array(clip), "parameters": {"language": "en"}})
    assert named["language_probability"] is None  # given, not detected


def test_only_what_lies_over_the_speech_is_kept():
    """Whisper's no-speech rule, which the batched pipeline (all long audio) ignores, is applied to its output;
    words outside the speech go, also from a segment that holds real speech too."""
    speech = Speech(((5.0, 10.0),))
    marked = Segment(6.0, 8.0, " Thank you.", avg_logprob=-1.4, no_speech_prob=0.8)
    sure = Segment(6.0, 8.0, " Thank you.", avg_logprob=-0.3, no_speech_prob=0.8)  # Whisper's rule keeps it
    outside = Segment(12.0, 14.0, " Bye.", avg_logprob=-0.2, no_speech_prob=0.1)
    assert [over_speech(s, speech) for s in (marked, sure, outside)] == [None, sure, None]
    words = (Word(0.0, 2.0, " you"), Word(5.2, 5.6, " Please"), Word(5.6, 6.0, " hold."))
    joined = over_speech(Segment(0.0, 6.0, " you Please hold.", words), speech)
    assert (joined.start, joined.end, joined.text, joined.words) == (5.2, 6.0, " Please hold.", words[1:])


@pytest.mark.parametrize("parameters", [
    {"vad_filter": True},  # one window: the speech check, then faster-whisper's own vad_filter
    {"chunk_length_s": 15},  # windows: the speech check, then the long-form windows' spans
])
def test_the_vad_hears_a_request_once(tiny_handler, monkeypatch, parameters):
    from faster_whisper.vad import SileroVADModel

    from support.audio import decode_reference
    from support.paths import AUDIO

    heard, call = [], SileroVADModel.__call__
    monkeypatch.setattr(SileroVADModel, "__call__", lambda self, audio, *args, **kwargs: (
        heard.append(len(audio)), call(self, audio, *args, **kwargs))[1])
    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: 16 * 16000]
    result = tiny_handler({"inputs": _array(samples), "parameters": {
        "return_timestamps": "none", "beam_size": 1, **parameters}})
    assert result["text"].strip()
    assert result["decoding"]["mode"] == ("batched" if "chunk_length_s" in parameters else "sequential")
    assert len(heard) == 1, (heard, result["decoding"])
