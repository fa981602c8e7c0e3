"""No request lost to one window (issue 69): a word alignment that finds nothing spreads the words over
their segment, and an error while decoding one window decodes it again the plain way.

The properties drive the real tiny.en model (sequential and batched paths, word timestamps) over pieces
of real speech and noise drawn at random; the fast tier draws a few, ``ALIGNMENT_EXAMPLES`` /
``PIECE_EXAMPLES`` in the environment draw more (docs/long_recordings.md gives the command and what
it drew).
"""

from __future__ import annotations

import io
import os
import wave
from functools import cache

import ctranslate2
import numpy as np
import pytest
import requests
from faster_whisper import BatchedInferencePipeline, WhisperModel
from faster_whisper.audio import pad_or_trim
from faster_whisper.tokenizer import Tokenizer
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support.audio import decode_reference
from support.paths import AUDIO
from support.serving import live_server
from whisper_endpoint.asr import cost
from whisper_endpoint.asr.ctranslate2 import alignment
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

RATE = 16000
SPREAD = "timed from their segment's span"
TEXTS = [" hello there", " So we met at the harbour, and then we left.", " Yes.", " one two three four five six",
         " What is this strange ship?"]


def _examples(name: str, fast: int) -> settings:
    return settings(max_examples=int(os.environ.get(name, fast)), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def model(tiny_handler):
    return tiny_handler.asr.model


@cache
def _speech() -> np.ndarray:
    """Real speech: an English and a Dutch dialogue, end to end."""
    return np.concatenate([decode_reference(AUDIO / "dialogues" / f"{name}.flac")
                           for name in ("flite_meeting", "fillets_cave")])


def _tokenizer(model) -> Tokenizer:
    return Tokenizer(model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en")


@st.composite
def pieces(draw) -> tuple[np.ndarray, str | None]:
    """A piece of 0.05 to 3 s of real speech or noise, cut anywhere, padded or not, and a previous text or none."""
    speech = _speech()
    length = round(draw(st.floats(0.05, 3.0)) * RATE)
    start = draw(st.integers(0, len(speech) - length))
    piece = speech[start: start + length]
    if draw(st.integers(0, 4)) == 0:  # noise instead, as loud as speech is
        piece = np.random.default_rng(draw(st.integers(0, 2**16))).normal(0, 0.05, length).astype(np.float32)
    before, after = (round(draw(st.floats(0, 1.0)) * RATE) for _ in range(2))
    if draw(st.booleans()):
        piece = np.concatenate([np.zeros(before, np.float32), piece, np.zeros(after, np.float32)])
    prompt = draw(st.sampled_from([None, "So we met at the harbour.", "Wat is dit voor raar schip?"]))
    return np.ascontiguousarray(piece, dtype=np.float32), prompt


def _wav(samples: np.ndarray) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as file:
        file.setnchannels(1)
        file.setsampwidth(2)
        file.setframerate(RATE)
        file.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()


def _sound(segments, duration: float) -> None:
    """Words in order, finite, inside the piece (a word may end a frame past it)."""
    for segment in segments:
        for word in segment.words or ():
            assert 0 <= word.start <= word.end <= duration + 0.05, (word, duration)


def test_an_alignment_over_almost_no_frames_spreads_the_words_over_their_segment(model, monkeypatch):
    tokenizer = _tokenizer(model)
    tokens = model.hf_tokenizer.encode(TEXTS[1], add_special_tokens=False).ids
    encoded = model.encode(pad_or_trim(model.feature_extractor(_speech()[: 3 * RATE])))
    with pytest.raises(IndexError):  # faster-whisper's own, on one frame: the DTW's path is empty
        WhisperModel.find_alignment(model, tokenizer, [tokens], encoded, 1)

    def timed(frames: int) -> tuple[list[dict], cost.WindowCounter]:
        segments = [[{"seek": 100, "start": 1.0, "end": 3.0, "tokens": tokens}]]  # the window starts at 1 s
        with cost.counting(30.0) as counter:
            model.add_word_timestamps(segments, tokenizer, encoded, frames, "\"'“¿([{-", "\"'.。,，!！?？:：”)]}、",
                                      0.0)
        words = segments[0][0]["words"]
        assert "".join(word["word"] for word in words) == TEXTS[1]
        assert all(a["end"] == b["start"] for a, b in zip(words, words[1:]))
        assert counter.words_spread == len(words) and cost.spread_note(counter)[0].startswith(f"{len(words)} word")
        return words, counter

    words, _ = timed(1)  # the segment's tokens say 1-3 s, but the window holds 10 ms of audio: within it
    assert words[0]["start"] == 1.0 and words[-1]["end"] == 1.01
    monkeypatch.setattr(WhisperModel, "find_alignment", lambda *args: [[]][5])  # planted: any raise, 2 s of audio
    words, _ = timed(200)
    assert words[0]["start"] == 1.0 and words[-1]["end"] == 3.0  # over the segment the decoder's tokens gave


@pytest.fixture(scope="module")
def encoded(model) -> list[np.ndarray]:
    """Three windows of real speech through the encoder (encoded once: the alignment is what is drawn)."""
    windows = [pad_or_trim(model.feature_extractor(_speech()[start * RATE: (start + 30) * RATE]))
               for start in (0, 30, 60)]
    return list(np.asarray(model.encode(np.stack(windows))))


@_examples("ALIGNMENT_EXAMPLES", 25)
@given(text=st.sampled_from(TEXTS), frames=st.lists(st.integers(0, 3000), min_size=1, max_size=3),
       which=st.integers(0, 2))
@example(text=TEXTS[0], frames=[0], which=0)
@example(text=TEXTS[1], frames=[1, 3000], which=1)
def test_any_window_aligns_to_sound_times(model, encoded, text, frames, which):
    tokenizer = _tokenizer(model)
    tokens = model.hf_tokenizer.encode(text, add_special_tokens=False).ids
    windows = [tokens] + [tokens[: index + 1] for index in range(len(frames) - 1)]  # a batch: window by window
    stacked = np.stack([encoded[(which + index) % len(encoded)] for index in range(len(frames))])
    found = model.find_alignment(tokenizer, windows, ctranslate2.StorageView.from_array(stacked), frames)
    assert len(found) == len(windows)
    for words, window, count in zip(found, windows, frames):
        assert alignment._sound(words, count)
        assert "".join(word["word"] for word in words) == model.hf_tokenizer.decode(window)


@_examples("PIECE_EXAMPLES", 1)
@given(drawn=st.lists(pieces(), min_size=1, max_size=2))
def test_any_piece_decodes_with_word_times_on_both_paths(model, drawn):
    for piece, prompt in drawn:  # the sequential decoder, as a window decoded alone is
        segments, _ = model.transcribe(piece, language="en", word_timestamps=True, initial_prompt=prompt,
                                       condition_on_previous_text=prompt is not None)
        _sound(list(segments), len(piece) / RATE)
    audio = np.concatenate([piece for piece, _ in drawn])
    edges = np.cumsum([0] + [len(piece) for piece, _ in drawn]) / RATE
    clips = [{"start": float(a), "end": float(b)} for a, b in zip(edges[:-1], edges[1:])]
    segments, _ = BatchedInferencePipeline(model).transcribe(audio, language="en", word_timestamps=True,
                                                             clip_timestamps=clips, batch_size=len(clips))
    # The batched pipeline times a window's words over its length rounded up to a second (windows.py
    # clamps them to the window afterwards).
    _sound(list(segments), float(sum(np.ceil(edges[1:] - edges[:-1]))))


def test_a_raise_in_the_alignment_leaves_the_request_answered_with_a_warning(tiny_handler, short_windows,
                                                                            monkeypatch):
    def planted(self, *args, **kwargs):
        raise IndexError("planted: the DTW's path is empty")

    monkeypatch.setattr(WhisperModel, "find_alignment", planted)
    body = _wav(decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: 21 * RATE])  # 3 windows of 10 s
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        response = requests.post(f"{server.url}/predict", data=body, timeout=120,
                                 params={"return_timestamps": "word", "chunk_length_s": 10})
    assert response.status_code == 200, response.text
    out = response.json()
    assert len(out["text"].split()) > 20
    assert any(SPREAD in warning for warning in out["warnings"]), out["warnings"]
    words = out["chunks"]
    assert len(words) > 20 and all(w["timestamp"][0] <= w["timestamp"][1] for w in words)


def test_a_window_whose_decoding_raises_is_decoded_again_the_plain_way(tiny_handler, short_windows, monkeypatch):
    plain = WhisperModel.add_word_timestamps

    def planted(self, *args, **kwargs):
        raise RuntimeError("planted: word timestamps fail")

    monkeypatch.setattr(WhisperModel, "add_word_timestamps", planted)
    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")
    for audio in (samples[: 9 * RATE], samples[: 5 * RATE]):  # batched windows (6 s), and one window alone
        out = tiny_handler.asr.transcribe(audio, InferenceConfig(return_timestamps="word", chunk_length_s=6))
        assert len(" ".join(s.text for s in out.segments).split()) > 6
        assert any("decoded again without word times after an error (request " in w for w in out.warnings)
        # Word times were asked for: each segment's words share its span.
        assert all(s.words and s.words[0].start == s.start for s in out.segments if s.text.strip())
        assert any(SPREAD in w for w in out.warnings)
    monkeypatch.setattr(WhisperModel, "add_word_timestamps", plain)
    monkeypatch.setattr(WhisperModel, "generate_segments", planted)
    out = tiny_handler.asr.transcribe(samples[: 5 * RATE], InferenceConfig(return_timestamps="word"))
    assert out.segments == [] and any("was not transcribed" in w for w in out.warnings)


def test_the_transformers_pipeline_decodes_again_without_word_times_after_an_error(tiny_tf, monkeypatch):
    def planted(*args, **kwargs):
        raise RuntimeError("planted: the word pipeline fails")

    monkeypatch.setattr(tiny_tf.asr, "word_pipe", planted)
    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")[: 8 * RATE]
    out = tiny_tf.asr.transcribe(samples, InferenceConfig(return_timestamps="word"))
    assert len(" ".join(s.text for s in out.segments).split()) > 10
    assert any("decoded again without word times after an error (request " in w for w in out.warnings)
    assert any(SPREAD in w for w in out.warnings) and all(s.words for s in out.segments if s.text.strip())
