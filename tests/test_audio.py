"""Decoding: every common container, down-mixing, resampling, and clean failures."""

import io
import re
import wave

import numpy as np
import pytest

from support.paths import CLIPS
from support.audio import decode_reference, encode
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.audio.decode import decode_file, from_array
from whisper_endpoint.core.errors import EmptyAudioError, InvalidInputError, PayloadTooLargeError, UndecodableAudioError

CLIP = CLIPS / "asterisk_vm-next.flac"
FORMATS = [("wav", "pcm_s16le"), ("flac", "flac"), ("mp3", "libmp3lame"), ("ogg", "libopus"), ("ipod", "aac"), ("webm", "libopus")]


def dominant_frequency(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.argmax(spectrum) * SAMPLE_RATE / len(samples))


@pytest.mark.parametrize("container,codec", FORMATS)
def test_each_container_decodes_to_the_same_audio(container, codec):
    reference = decode_reference(CLIP)
    rate = 48000 if codec == "libopus" else SAMPLE_RATE  # opus encodes 48 kHz only
    source = np.interp(np.arange(0, len(reference), SAMPLE_RATE / rate), np.arange(len(reference)), reference)
    audio = decode_file(encode(source, rate, container, codec), max_seconds=60)
    assert audio.samples.dtype == np.float32 and audio.source_rate == rate
    # Lossy codecs add padding (priming samples); the length stays within 0.1 s.
    assert abs(audio.duration - len(reference) / SAMPLE_RATE) < 0.1
    assert 0.5 < np.std(audio.samples) / np.std(reference) < 2
    assert audio.warnings == ()  # codec delay and padding are no truncation


def test_flac_matches_faster_whisper_decoder():
    ours = decode_file(CLIP.read_bytes(), max_seconds=60).samples
    theirs = decode_reference(CLIP)
    assert len(ours) == len(theirs)
    assert np.max(np.abs(ours - theirs)) < 1e-3  # theirs is int16-quantised


def test_stereo_44k_file_is_downmixed_and_resampled_keeping_pitch():
    t = np.arange(44100 * 2) / 44100
    left, right = 0.5 * np.sin(2 * np.pi * 440 * t), 0.5 * np.sin(2 * np.pi * 440 * t)
    audio = decode_file(encode(np.stack([left, right]), 44100, "wav", "pcm_s16le", channels=2), max_seconds=60)
    assert audio.source_rate == 44100 and audio.source_channels == 2
    assert abs(audio.duration - 2.0) < 0.01
    assert abs(dominant_frequency(audio.samples) - 440) < 2


@pytest.mark.parametrize("rate", [8000, 22050, 48000])
def test_array_input_is_resampled_from_its_own_rate(rate):
    # The reference handler labelled such arrays 16 kHz; a 1 kHz tone must stay 1 kHz.
    t = np.arange(rate * 3) / rate
    audio = from_array(np.sin(2 * np.pi * 1000 * t).tolist(), rate, max_seconds=60)
    assert abs(audio.duration - 3.0) < 0.01
    assert abs(dominant_frequency(audio.samples) - 1000) < 2


def test_two_channel_array_is_averaged():
    audio = from_array([[0.5] * 1600, [-0.1] * 1600], 16000, max_seconds=60)
    assert np.allclose(audio.samples, 0.2)


def test_empty_bytes():
    with pytest.raises(EmptyAudioError, match="0 bytes"):
        decode_file(b"", max_seconds=60)


def test_zero_length_wav():
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:  # a valid header announcing no frames
        out.setnchannels(1), out.setsampwidth(2), out.setframerate(16000)
    with pytest.raises(EmptyAudioError, match="zero-length"):
        decode_file(buffer.getvalue(), max_seconds=60)


def test_bytes_that_are_not_audio():
    with pytest.raises(UndecodableAudioError) as info:
        decode_file(b"this is plain text, not an audio file" * 20, max_seconds=60)
    assert info.value.status == 415


def test_truncated_file_keeps_what_decodes_or_fails_cleanly():
    data = CLIP.read_bytes()
    audio = decode_file(data[: len(data) // 2], max_seconds=60)
    assert 0 < audio.duration < len(decode_reference(CLIP)) / SAMPLE_RATE


def _streamed_flac(data: bytes) -> bytes:
    """The clip as a streaming FLAC encoder leaves it: STREAMINFO's total samples (36 bits) and MD5 zero."""
    out = bytearray(data)
    assert out[:4] == b"fLaC" and out[4] & 0x7F == 0  # the first metadata block is STREAMINFO
    fields = int.from_bytes(out[18:26], "big") & ~((1 << 36) - 1)
    out[18:26], out[26:42] = fields.to_bytes(8, "big"), bytes(16)
    return bytes(out)


def _streamed_wav(data: bytes) -> bytes:
    """A WAV written to a pipe: the data chunk's size is the 0xFFFFFFFF placeholder."""
    at = data.index(b"data") + 4
    return data[:at] + b"\xff\xff\xff\xff" + data[at + 4:]


def _clip_as(container: str, codec: str, **options) -> bytes:
    reference = decode_reference(CLIP)
    rate = 48000 if codec == "libopus" else SAMPLE_RATE
    source = np.interp(np.arange(0, len(reference), SAMPLE_RATE / rate), np.arange(len(reference)), reference)
    return encode(source, rate, container, codec, options=options)


TRUNCATED = {  # name -> the whole file, and the bytes of it that are kept
    "flac, its first seventh (STREAMINFO)": (CLIP.read_bytes, lambda data: data[: len(data) // 7]),
    "wav, first 23 kB (data chunk size)": (lambda: _clip_as("wav", "pcm_s16le"), lambda data: data[:23_000]),
    "mp3, first half (Xing frame count)": (lambda: _clip_as("mp3", "libmp3lame"), lambda data: data[: len(data) // 2]),
    "webm, first half (segment duration)": (lambda: _clip_as("webm", "libopus"), lambda data: data[: len(data) // 2]),
}
UNDECLARED = {  # formats and writers that declare no length: a truncation cannot be told from a short file
    "streamed flac (total samples 0)": lambda: _streamed_flac(CLIP.read_bytes())[: len(CLIP.read_bytes()) // 7],
    "MediaRecorder-like webm (live)": lambda: (d := _clip_as("webm", "libopus", live="1"))[: len(d) // 2],
    "ogg/opus": lambda: (d := _clip_as("ogg", "libopus"))[: len(d) // 2],
    "streamed wav (size 0xFFFFFFFF)": lambda: _streamed_wav(_clip_as("wav", "pcm_s16le"))[:23_000],
}


@pytest.mark.parametrize("name", TRUNCATED)
def test_a_file_that_ends_before_its_declared_length_is_said(name):
    whole, cut = TRUNCATED[name]
    data = whole()
    full, truncated = decode_file(data, max_seconds=60), decode_file(cut(data), max_seconds=60)
    assert full.warnings == () and 0.2 < truncated.duration < full.duration - 1
    [warning] = truncated.warnings
    found = re.fullmatch(r"the file declares ([\d.]+) s of audio but only ([\d.]+) s decode \(a truncated file or an "
                         r"incomplete upload\?\): the transcript covers those \2 s", warning)
    declared, decoded = float(found[1]), float(found[2])
    # The header's length is the whole file's (give or take codec delay), the decoded one what is left.
    assert abs(declared - full.duration) < 0.1 and abs(decoded - truncated.duration) < 0.05


@pytest.mark.parametrize("name", UNDECLARED)
def test_files_that_declare_no_length_are_never_flagged(name):
    audio = decode_file(UNDECLARED[name](), max_seconds=60)
    assert 0 < audio.duration < 2.5 and audio.warnings == ()


def test_duration_limit_stops_decoding():
    data = encode(np.zeros(16000 * 20), 16000, "flac", "flac")
    with pytest.raises(PayloadTooLargeError, match="MAX_AUDIO_SECONDS"):
        decode_file(data, max_seconds=5)


@pytest.mark.parametrize("bad,message", [
    ([0.1, float("nan")], "NaN"),
    ("not numbers", "list of numbers"),
    ([[[0.0]]], "shape"),
])
def test_bad_arrays(bad, message):
    with pytest.raises(InvalidInputError, match=message):
        from_array(bad, 16000, max_seconds=60)


def test_a_file_of_exactly_the_longest_duration_is_accepted():
    """625 FLAC frames of 0.288 s sum to 180.0000000000009 s in floats: still not over a limit of 180 s."""
    body = encode(np.zeros(180 * 16000, np.float32), 16000, "flac", "flac")
    assert decode_file(body, max_seconds=180).duration == 180
    with pytest.raises(PayloadTooLargeError):
        decode_file(encode(np.zeros(180 * 16000 + 1, np.float32), 16000, "flac", "flac"), max_seconds=180)
