"""One speaker per channel (``multichannel: true``): real stereo files built from the clips, tiny.en,
through the handler, the output formats and the OpenAI route; the channel decoding; the 4xx cases."""

from __future__ import annotations

import io
import wave

import numpy as np
import openai
import pytest

from support.metrics import normalize
from support.paths import CLIPS
from support.audio import clip_refs, decode_reference, encode
from support.serving import live_server
from whisper_endpoint import formats
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.audio.decode import channels_from_array, decode_channels, decode_file
from whisper_endpoint.batch.runner import check_formats
from whisper_endpoint.core.errors import InvalidInputError, InvalidParameterError, PayloadTooLargeError
from whisper_endpoint.multichannel.crosstalk import gate_crosstalk
from whisper_endpoint.multichannel.merge import Spoken, channel_turns
from whisper_endpoint.pipeline.request import parse_request
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

AGENT = ("asterisk_all-circuits-busy-now.flac", "asterisk_confbridge-unmuted.flac")  # at 0 s and 5.5 s
CALLER = "asterisk_vm-next.flac"  # at 1 s, while the agent still speaks
NAMES = {"multichannel": True, "channel_names": ["agent", "caller"]}
LEAK = 10 ** (-25 / 20)


def _placed(pieces: list[tuple[float, str]], length: int) -> np.ndarray:
    channel = np.zeros(length, np.float32)
    for start, name in pieces:
        clip = decode_reference(CLIPS / name)
        at = int(start * SAMPLE_RATE)
        channel[at : at + len(clip)] = clip[: length - at]
    return channel


@pytest.fixture(scope="module")
def call() -> np.ndarray:
    """A 7.5 s two-party call: the agent on the left channel, the caller on the right, overlapping; each
    voice also leaks into the other channel at -25 dB, as on a phone line."""
    length = int(7.5 * SAMPLE_RATE)
    own = np.stack([_placed([(0.0, AGENT[0]), (5.5, AGENT[1])], length), _placed([(1.0, CALLER)], length)])
    return own + LEAK * own[::-1]


@pytest.fixture(scope="module")
def call_file(call) -> bytes:
    return encode(call, SAMPLE_RATE, "flac", "flac", channels=2)


@pytest.fixture(scope="module")
def result(tiny_handler, call_file) -> dict:
    parameters = {**NAMES, "return_timestamps": "word", "return_speaker_turns": True, "return_speaker_words": True,
                  "return_confidence": True}
    return tiny_handler({"inputs": call_file, "parameters": parameters})


def test_each_channel_is_one_speaker_and_their_turns_merge_in_time_order(result):
    refs = clip_refs()
    turns = [(s["speaker"], s["channel"], normalize(s["text"])) for s in result["speakers"]]
    assert turns == [("agent", 0, normalize(refs[AGENT[0]])), ("caller", 1, normalize(refs[CALLER])),
                     ("agent", 0, normalize(refs[AGENT[1]]))]
    agent, caller, agent_again = (s["timestamp"] for s in result["speakers"])
    assert agent[0] < caller[0] < agent[1]  # overlapping speech stays two entries
    assert 0.8 < caller[0] < 1.3 and 5.3 < agent_again[0] < 5.8  # word times, not Whisper's loose segment starts
    assert all(w["speaker"] == s["speaker"] for s in result["speakers"] for w in s["words"])
    assert [c["name"] for c in result["channels"]] == ["agent", "caller"] and result["decoding"]["channels"] == 2
    assert normalize(result["text"]) == normalize(" ".join(refs[name] for name in (AGENT[0], CALLER, AGENT[1])))


def test_chunks_carry_their_channel_in_time_order(result):
    starts = [chunk["timestamp"][0] for chunk in result["chunks"]]
    assert starts == sorted(starts)
    by_channel = {0: "", 1: ""}
    for chunk in result["chunks"]:
        by_channel[chunk["channel"]] += chunk["text"]
    refs = clip_refs()
    assert normalize(by_channel[1]) == normalize(refs[CALLER])
    assert normalize(by_channel[0]) == normalize(refs[AGENT[0]] + " " + refs[AGENT[1]])
    # return_confidence: each word its probability, each channel's segments beside the words
    assert all(0 < chunk["probability"] <= 1 for chunk in result["chunks"])
    assert {s["channel"] for s in result["segments"]} == {0, 1} and all(s["avg_logprob"] < 0 for s in result["segments"])


def test_every_speaker_format_names_the_channels(result):
    srt = formats.render(result, "srt").body
    assert "[agent] All circuits are busy now." in srt and "[caller] Press 6" in srt
    assert "<v caller>Press 6" in formats.render(result, "vtt").body
    assert formats.render(result, "txt").body.startswith("agent: All circuits")
    assert [row.split("\t")[2] for row in formats.render(result, "tsv").body.splitlines()] == [
        "speaker", "agent", "caller", "agent"]
    rttm = formats.render(result, "rttm", formats.Context(file_id="call")).body.splitlines()
    assert [line.split()[7] for line in rttm] == ["agent", "caller", "agent"]
    segments = formats.render(result, "diarized_json").body["segments"]
    assert [s["speaker"] for s in segments] == ["agent", "caller", "agent"]


def test_a_silent_channel_gives_no_words(tiny_handler, call):
    silent = np.stack([call[0], np.zeros_like(call[0])])
    result = tiny_handler({"inputs": {"array": silent.tolist(), "sampling_rate": SAMPLE_RATE},
                           "parameters": {"multichannel": True}})
    assert {s["speaker"] for s in result["speakers"]} == {"CHANNEL_0"}
    assert {c["channel"] for c in result["chunks"]} == {0}
    assert [c["silent"] for c in result["channels"]] == [False, True]


def test_dual_mono_is_reported(tiny_handler):
    clip = decode_reference(CLIPS / AGENT[1])
    result = tiny_handler({"inputs": {"array": [clip.tolist()] * 2}, "parameters": {"multichannel": True}})
    assert "channels 0 and 1 carry the same audio" in result["warnings"][0]
    assert [s["channel"] for s in result["speakers"]] == [0, 1]


def test_leaks_are_muted_and_overlapping_voices_kept():
    rng = np.random.default_rng(1)
    second = SAMPLE_RATE
    a, b = np.zeros(3 * second), np.zeros(3 * second)
    a[: 2 * second] = 0.3 * rng.standard_normal(2 * second)  # a speaks 0-2 s
    b[second:] = 0.1 * rng.standard_normal(2 * second)  # b, 10 dB quieter, speaks 1-3 s: both at 1-2 s
    mixed = np.stack([a + LEAK * b, b + LEAK * a]).astype(np.float32)
    gated = gate_crosstalk(mixed)
    edge = 400  # 25 ms: levels are compared over 50 ms
    assert not gated[1, : second - edge].any() and not gated[0, 2 * second + edge :].any()  # the leaks
    both = slice(second + edge, 2 * second - edge)
    assert np.array_equal(gated[:, both], mixed[:, both])


def test_the_down_mix_stays_the_default(call, call_file):
    request = parse_request({"inputs": call_file, "parameters": {"channel_names": "a,b"}}, max_seconds=60)
    assert request.audio.samples.shape == (call.shape[1],) and request.audio.source_channels == 2
    assert np.corrcoef(request.audio.samples, call.sum(axis=0))[0, 1] > 0.999  # FFmpeg mixes at -3 dB each
    assert request.warnings == ["channel_names apply with multichannel: true only; ignored"]


def test_openai_route_with_channel_names_as_text(tiny_handler, call):
    short = encode(call[:, : int(4.5 * SAMPLE_RATE)], SAMPLE_RATE, "flac", "flac", channels=2)  # one turn each
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0)
        body = client.audio.transcriptions.create(
            model="whisper-1", file=("call.flac", short), response_format="diarized_json",
            extra_body={"multichannel": "true", "channel_names": '["agent", "caller"]'})
    assert [segment.speaker for segment in body.segments] == ["agent", "caller"]


def test_batch_accepts_speaker_formats_for_multichannel_without_diarization():
    formats_, parameters = check_formats(["rttm", "srt"], {"multichannel": True}, diarization=False)
    assert formats_ == ["json", "rttm", "srt"] and parameters["return_speaker_turns"] is True


# --- decoding and bad input ----------------------------------------------------------------------------------


def _wav(channels: int, seconds: float, rate: int = 16000) -> bytes:
    noise = (np.random.default_rng(0).standard_normal((int(rate * seconds), channels)) * 3000).astype(np.int16)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels), out.setsampwidth(2), out.setframerate(rate)
        out.writeframes(noise.tobytes())
    return buffer.getvalue()


def test_each_channel_is_resampled_on_its_own():
    t = np.arange(44100 * 2) / 44100
    tones = np.stack([0.5 * np.sin(2 * np.pi * 440 * t), 0.25 * np.sin(2 * np.pi * 1000 * t)])
    audio = decode_channels(encode(tones, 44100, "flac", "flac", channels=2), max_seconds=60)
    assert audio.samples.shape == (2, 2 * SAMPLE_RATE) and audio.source_rate == 44100
    peaks = [np.argmax(np.abs(np.fft.rfft(ch))) * SAMPLE_RATE / audio.samples.shape[1] for ch in audio.samples]
    assert peaks == pytest.approx([440, 1000], abs=2)
    assert np.abs(audio.samples).max(axis=1) == pytest.approx([0.5, 0.25], abs=0.01)


def test_eight_unnamed_channels_decode():
    # PyAV's resampler crashes the process on such a layout; every channel goes through it alone.
    assert decode_channels(_wav(8, 0.5, rate=22050), max_seconds=60).samples.shape == (8, 8000)


@pytest.mark.parametrize("channels", [9, 16, 32])
def test_more_than_eight_channels_are_down_mixed(channels):
    """Without multichannel such a file is down-mixed like any other; FFmpeg's resampler refuses most
    of these unnamed layouts, which was a 500."""
    audio = decode_file(_wav(channels, 1.0, rate=22050), max_seconds=60)
    assert audio.samples.shape == (SAMPLE_RATE,) and audio.source_channels == channels
    assert 0 < np.abs(audio.samples).max() < 1


def test_the_limit_counts_channel_seconds():
    assert decode_channels(_wav(4, 7.0), max_seconds=30).duration == pytest.approx(7.0)
    with pytest.raises(PayloadTooLargeError, match="4 channels add up to more than the limit of 30 s"):
        decode_channels(_wav(4, 8.0), max_seconds=30)
    with pytest.raises(PayloadTooLargeError, match="2 channels"):
        channels_from_array(np.zeros((2, 16000 * 16)), 16000, max_seconds=30)


@pytest.mark.parametrize("inputs, parameters, error, fragment", [
    (_wav(1, 0.5), {}, InvalidInputError, "2 to 8 channels; this audio has 1"),
    (_wav(9, 0.5), {}, InvalidInputError, "at most 8 channels; this audio has 9"),
    ({"array": np.zeros((9, 800)).tolist()}, {}, InvalidInputError, "at most 8 channels"),
    ({"array": [0.0] * 800}, {}, InvalidInputError, "this audio has 1"),
    (_wav(2, 0.5), {"channel_names": "a,b,c"}, InvalidParameterError, "3 names for 2 channels"),
    (_wav(2, 0.5), {"channel_names": ["a", "a"]}, InvalidParameterError, "must differ"),
])
def test_bad_multichannel_requests_are_client_errors(tiny_handler, inputs, parameters, error, fragment):
    with pytest.raises(error, match=fragment) as caught:
        tiny_handler({"inputs": inputs, "parameters": {"multichannel": True, **parameters}})
    assert 400 <= caught.value.status < 500


def test_a_channel_s_turn_ends_when_another_channel_takes_the_floor_in_its_pause():
    def words(channel, *spans):
        return [Spoken(start, end, f" {channel}{start:g}", f"ch{channel}", channel) for start, end in spans]

    a = words(0, (0.0, 1.0), (1.0, 2.0), (4.0, 5.0), (5.0, 6.0), (8.0, 9.0))  # pauses 2-4 s and 6-8 s
    b = words(1, (0.5, 0.8), (3.0, 3.5), (10.0, 11.0))  # a "yeah" under a's word; a reply in a's first pause
    turns = [(t[0].speaker, t[0].start, t[-1].end) for t in channel_turns([a, b])]
    # The overlap splits nothing; b's reply cuts a's turn; nobody spoke in a's second pause: one turn.
    assert turns == [("ch0", 0.0, 2.0), ("ch1", 0.5, 0.8), ("ch1", 3.0, 3.5), ("ch0", 4.0, 9.0), ("ch1", 10.0, 11.0)]
