"""The hostile- and odd-input corpus (#8) as data: each case with the status it is documented to get.

``PAYLOAD_CASES`` are handler payloads: ``test_hardening.py`` calls the handler with each and posts
each to the live server (files as base64 JSON, which is what the toolkit sends). ``HTTP_CASES`` only
exist over HTTP (multipart uploads, broken JSON). The corpus runs with ``MAX_AUDIO_SECONDS`` =
``LIMIT_S``, a real-time limit, so the over-limit cases stay small. ``scripts/fuzz.py`` mutates these
same inputs. docs/hardening.md has the table.
"""

from __future__ import annotations

import base64
import io
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import av
import numpy as np
import requests

from support.audio import encode, read_clip
from support.serving import CLIP, TEXT
from whisper_endpoint.pipeline.asr_step import NO_SPEECH_WARNING

LIMIT_S = 30.0  # MAX_AUDIO_SECONDS of the handler the corpus runs against
DEEP_JSON = "[" * 100_000 + "]" * 100_000
ANY = object()  # a 200 whose text is not checked (too little speech to expect exact words)


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    code: str | None = None  # the error's code; None for 200
    payload: Callable[[], object] | None = None  # the handler's input (also sent to the server)
    request: Callable[[str], requests.Response] | None = None  # an HTTP-only request against a base URL
    text: object = TEXT  # expected text of a 200
    warns: str | None = None  # a 200's warnings must include this one
    mentions: str | None = None  # the error message must name this (the limit's setting, the parameter)
    # A known defect in a file outside this issue's (what is wrong, where): the case's checks must fail
    # today, so the test fails, and the case is updated, once the defect is fixed.
    gap: str | None = None


# --- audio builders (cached: the corpus and the fuzzer reuse them) ---------------------------------


@cache
def clip_bytes() -> bytes:
    return read_clip(CLIP)


@cache
def clip_samples() -> np.ndarray:
    from whisper_endpoint.audio.decode import decode_file

    return decode_file(clip_bytes(), max_seconds=60).samples


def at_rate(rate: int) -> np.ndarray:
    samples = clip_samples()
    n = int(len(samples) * rate / 16000)
    return np.interp(np.linspace(0, len(samples) - 1, n), np.arange(len(samples)), samples).astype(np.float32)


def encode_layout(samples: np.ndarray, rate: int, container: str, codec: str, layout: str) -> bytes:
    """Encode the same mono signal into every channel of ``layout`` (e.g. '5.1')."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        channels = stream.layout.nb_channels
        planar = np.repeat(samples[None, :].astype(np.float32), channels, axis=0)
        frame = av.AudioFrame.from_ndarray(planar, format="fltp", layout=layout)
        frame.sample_rate = rate
        fmt = stream.codec_context.codec.audio_formats[0].name
        resampler = av.AudioResampler(format=fmt, layout=layout, rate=rate)
        for converted in resampler.resample(frame) + resampler.resample(None):
            for packet in stream.encode(converted):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()


def flac_silence(seconds: float, rate: int = 8000) -> bytes:
    """A decompression bomb: FLAC's largest blocks of constant silence, ~8 bytes per 8 s of audio."""
    buffer = io.BytesIO()
    block = rate * 10
    with av.open(buffer, mode="w", format="flac") as out:
        stream = out.add_stream("flac", rate=rate, layout="mono")
        stream.codec_context.format = "s16"
        stream.codec_context.options = {"frame_size": "65535"}
        silence = np.zeros((1, block), dtype=np.int16)
        for start in range(0, int(seconds * rate), block):
            frame = av.AudioFrame.from_ndarray(silence, format="s16", layout="mono")
            frame.sample_rate, frame.pts = rate, start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()


def video_only() -> bytes:
    """A Matroska file with one short video stream and no audio."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="matroska") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for i in range(5):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 40, dtype=np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()


@cache
def silence(seconds: int) -> bytes:
    return encode(np.zeros(16000 * seconds), 16000, "flac", "flac")


def unknown_codec_wav() -> bytes:
    """A mu-law wav whose format tag (bytes 20-21) is changed to 0x0086, which FFmpeg cannot decode."""
    data = bytearray(wav(at_rate(8000), 8000, "pcm_mulaw"))
    data[20:22] = b"\x86\x00"
    return bytes(data)


def wav(samples: np.ndarray, rate: int = 16000, codec: str = "pcm_s16le") -> bytes:
    return encode(samples, rate, "wav", codec)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def with_params(**parameters):
    return lambda: {"inputs": clip_bytes(), "parameters": parameters}


def array(values, **extra):
    return lambda: {"inputs": {"array": values() if callable(values) else values, **extra}}


# --- the corpus ------------------------------------------------------------------------------------

PAYLOAD_CASES = [
    # Odd but valid audio: transcribed.
    Case("8 kHz telephone audio (mu-law wav)", 200, payload=lambda: {"inputs": wav(at_rate(8000), 8000, "pcm_mulaw")}),
    Case("48 kHz flac", 200, payload=lambda: {"inputs": encode(at_rate(48000), 48000, "flac", "flac")}),
    Case("96 kHz 24-bit wav", 200, payload=lambda: {"inputs": wav(at_rate(96000), 96000, "pcm_s24le")}),
    Case("stereo 44.1 kHz mp3", 200, payload=lambda: {"inputs": encode(at_rate(44100), 44100, "mp3", "libmp3lame", 2)}),
    Case("6-channel (5.1) flac", 200,
         payload=lambda: {"inputs": encode_layout(clip_samples(), 16000, "flac", "flac", "5.1")}),
    Case("clip under 0.5 s (0.3 s)", 200, payload=lambda: {"inputs": wav(clip_samples()[:4800])}, text=ANY),
    Case("speech after 20 s of silence", 200,
         payload=lambda: {"inputs": encode(np.concatenate([np.zeros(16000 * 20, np.float32), clip_samples()]),
                                           16000, "flac", "flac")}),
    # Non-speech is dropped by default (drop_non_speech): no words made up over silence, and it says so.
    Case("25 s of silence only", 200, payload=lambda: {"inputs": silence(25)}, text="", warns=NO_SPEECH_WARNING),
    Case("25 s of silence, vad_filter on", 200,
         payload=lambda: {"inputs": silence(25), "parameters": {"vad_filter": True}}, text=""),
    Case("clipping (gain x20, hard-clipped)", 200,
         payload=lambda: {"inputs": wav(np.clip(clip_samples() * 20, -1, 1))}),
    Case("DC offset (+0.4)", 200, payload=lambda: {"inputs": wav(clip_samples() * 0.5 + 0.4)}),
    Case("data: URL base64", 200, payload=lambda: {"inputs": "data:audio/flac;base64," + b64(clip_bytes())}),
    # Found by scripts/fuzz.py: a stream whose channels or rate change mid-way broke the resampler.
    Case("mp3 switching from mono to stereo mid-stream", 200, text=ANY,
         payload=lambda: {"inputs": encode(clip_samples()[:16000], 16000, "mp3", "libmp3lame")
                          + encode(clip_samples()[16000:], 16000, "mp3", "libmp3lame", 2)}),
    Case("mp3 switching from 16 to 8 kHz mid-stream", 200, text=ANY,
         payload=lambda: {"inputs": encode(clip_samples()[:16000], 16000, "mp3", "libmp3lame")
                          + encode(at_rate(8000)[8000:], 8000, "mp3", "libmp3lame")}),
    Case("file truncated to its first half", 200, payload=lambda: {"inputs": clip_bytes()[: len(clip_bytes()) // 2]},
         text=ANY),
    Case("array at 8 kHz with its sampling_rate", 200,
         payload=array(lambda: at_rate(8000).tolist(), sampling_rate=8000)),
    Case("2-channel array", 200, payload=array(lambda: np.stack([clip_samples()] * 2).tolist())),
    Case("unknown parameter (ignored, warned)", 200, payload=with_params(return_timestamps="none", shout=True)),
    # Invalid payloads.
    Case("no inputs", 400, "missing_inputs", payload=lambda: {"parameters": {}}),
    Case("inputs null", 400, "missing_inputs", payload=lambda: {"inputs": None}),
    Case("request is a list, not an object", 400, "invalid_inputs", payload=lambda: [clip_bytes()]),
    Case("inputs a number", 400, "invalid_inputs", payload=lambda: {"inputs": 42}),
    Case("inputs not base64", 400, "invalid_inputs", payload=lambda: {"inputs": "%%% not base64 %%%"}),
    Case("zero-byte file", 400, "empty_audio", payload=lambda: {"inputs": b""}),
    Case("wav header without samples", 400, "empty_audio", payload=lambda: {"inputs": wav(np.zeros(0))}),
    Case("text, not audio", 415, "undecodable_audio", payload=lambda: {"inputs": b"plain text, not audio " * 20}),
    Case("file truncated to its header (40 bytes)", 415, "undecodable_audio",
         payload=lambda: {"inputs": clip_bytes()[:40]}),
    Case("RIFF/WAVE header over random bytes", 415, "undecodable_audio",
         payload=lambda: {"inputs": b"RIFF\xff\xff\xff\x7fWAVEfmt " + np.random.default_rng(0).bytes(4000)}),
    Case("wav whose codec tag names no decoder (found by fuzzing)", 415, "undecodable_audio",
         payload=lambda: {"inputs": unknown_codec_wav()}, mentions="codec"),
    Case("container with no audio stream (video-only mkv)", 415, "undecodable_audio",
         payload=lambda: {"inputs": video_only()}, mentions="no audio stream"),
    Case("file longer than MAX_AUDIO_SECONDS", 413, "payload_too_large",
         payload=lambda: {"inputs": encode(np.zeros(int(16000 * (LIMIT_S + 5))), 16000, "flac", "flac")},
         mentions="MAX_AUDIO_SECONDS"),
    Case("decompression bomb: 39 kB FLAC of 5 h", 413, "payload_too_large",
         payload=lambda: {"inputs": flac_silence(5 * 3600)}, mentions="MAX_AUDIO_SECONDS"),
    Case("array longer than MAX_AUDIO_SECONDS", 413, "payload_too_large",
         payload=array([0.0] * int(1000 * (LIMIT_S + 1)), sampling_rate=1000), mentions="MAX_AUDIO_SECONDS"),
    Case("object without 'array'", 400, "missing_inputs", payload=lambda: {"inputs": {"samples": [0.1]}}),
    Case("array with NaN", 400, "invalid_inputs", payload=array([0.1, math.nan, 0.2]), mentions="NaN"),
    Case("array with infinity", 400, "invalid_inputs", payload=array([0.1, math.inf]), mentions="infinite"),
    Case("array of text", 400, "invalid_inputs", payload=array(["a", "b"])),
    Case("ragged array", 400, "invalid_inputs", payload=array([[0.1, 0.2], [0.1]])),
    Case("array with 9 channels", 400, "invalid_inputs", payload=array(lambda: np.zeros((9, 100)).tolist())),
    Case("3-D array", 400, "invalid_inputs", payload=array(lambda: np.zeros((2, 2, 100)).tolist())),
    Case("array of int16-scaled samples", 400, "invalid_inputs",
         payload=array(lambda: (clip_samples() * 32767).tolist()), mentions="32768"),
    Case("array of 1e19 (overflows the features)", 400, "invalid_inputs", payload=array([1e19] * 1600)),
    Case("empty array", 400, "empty_audio", payload=array([])),
    Case("array sampling_rate 0", 422, "invalid_parameter", payload=array([0.1] * 100, sampling_rate=0),
         mentions="sampling_rate"),
    Case("array sampling_rate as text", 422, "invalid_parameter", payload=array([0.1] * 100, sampling_rate="fast")),
    # Parameters: every numeric bound, types, names.
    Case("batch_size 0", 422, "invalid_parameter", payload=with_params(batch_size=0), mentions="batch_size"),
    Case("batch_size 257", 422, "invalid_parameter", payload=with_params(batch_size=257), mentions="batch_size"),
    Case("chunk_length_s 31", 422, "invalid_parameter", payload=with_params(chunk_length_s=31),
         mentions="chunk_length_s"),
    Case("chunk_length_s 0", 422, "invalid_parameter", payload=with_params(chunk_length_s=0),
         mentions="chunk_length_s"),
    Case("beam_size 11", 422, "invalid_parameter", payload=with_params(beam_size=11), mentions="beam_size"),
    Case("beam_size NaN", 422, "invalid_parameter", payload=with_params(beam_size=math.nan), mentions="beam_size"),
    Case("beam_size 2.5", 422, "invalid_parameter", payload=with_params(beam_size=2.5), mentions="beam_size"),
    Case("parameters.sampling_rate 999", 422, "invalid_parameter", payload=with_params(sampling_rate=999),
         mentions="sampling_rate"),
    Case("num_speakers 0", 422, "invalid_parameter", payload=with_params(num_speakers=0), mentions="num_speakers"),
    Case("max_speakers 101", 422, "invalid_parameter", payload=with_params(max_speakers=101), mentions="max_speakers"),
    Case("min_speakers > max_speakers", 422, "invalid_parameter", payload=with_params(min_speakers=3, max_speakers=2),
         mentions="min_speakers"),
    Case("initial_prompt over 2000 characters", 422, "invalid_parameter",
         payload=with_params(initial_prompt="word " * 401), mentions="initial_prompt"),
    Case("unknown language", 422, "invalid_parameter", payload=with_params(language="klingon"), mentions="klingon"),
    Case("1 MB language (not echoed back)", 422, "invalid_parameter", payload=with_params(language="x" * 1_000_000),
         mentions="1000002 characters"),
    Case("task 'summarize'", 422, "invalid_parameter", payload=with_params(task="summarize"), mentions="task"),
    Case("return_timestamps 'sometimes'", 422, "invalid_parameter", payload=with_params(return_timestamps="sometimes")),
    Case("vad_filter 'maybe'", 422, "invalid_parameter", payload=with_params(vad_filter="maybe"),
         mentions="vad_filter"),
    Case("parameters a list", 422, "invalid_parameter", payload=lambda: {"inputs": clip_bytes(), "parameters": [1, 2]}),
    Case("translate on an English-only model", 400, "unsupported_option", payload=with_params(task="translate")),
    Case("Japanese on an English-only model", 400, "unsupported_option", payload=with_params(language="ja")),
]


def _upload(name: str, data: Callable[[], bytes], **fields):
    return lambda url: requests.post(f"{url}/v1/audio/transcriptions", data={"model": "whisper-1", **fields},
                                     files={"file": (name, data())}, timeout=60)


def _raw_json(body: str, path: str = "/"):
    return lambda url: requests.post(url + path, data=body.encode(), timeout=60,
                                     headers={"Content-Type": "application/json"})


class JobOutcome:
    """A finished job's error (or result) in the shape of an HTTP response, for the corpus' checks."""

    def __init__(self, state: dict):
        self.state = state
        self.status_code = state["error"]["status"] if state["status"] == "failed" else 200

    def json(self) -> dict:
        return self.state["error"] if self.status_code != 200 else self.state["result"]


def _job(data: Callable[[], bytes], timeout_s: float = 120):
    """Submit ``data`` to POST /jobs (202), then wait for the job to end and return its outcome."""

    def run(url: str):
        submitted = requests.post(f"{url}/jobs", data=data(), headers={"Content-Type": "audio/flac"}, timeout=60)
        if submitted.status_code != 202:
            return submitted
        job_url = f"{url}/jobs/{submitted.json()['id']}"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = requests.get(job_url, timeout=10).json()
            if state["status"] in ("succeeded", "failed"):
                return JobOutcome(state)
            time.sleep(0.1)
        raise TimeoutError(f"the job {job_url} did not finish in {timeout_s} s")

    return run


def _jobs_post(data: bytes, content_type: str = "audio/flac", **query):
    return lambda url: requests.post(f"{url}/jobs", params=query, data=data, timeout=60,
                                     headers={"Content-Type": content_type})


HTTP_CASES = [
    Case("openai: flac uploaded as .mp3 (wrong extension)", 200, request=_upload("busy.mp3", clip_bytes)),
    Case("openai: text uploaded as .wav", 415, "undecodable_audio",
         request=_upload("a.wav", lambda: b"not audio" * 50)),
    Case("openai: zero-byte upload", 400, "empty_audio", request=_upload("a.flac", lambda: b"")),
    Case("openai: video-only upload", 415, "undecodable_audio", request=_upload("a.mkv", video_only)),
    Case("openai: decompression bomb upload", 413, "payload_too_large",
         request=_upload("bomb.flac", lambda: flac_silence(5 * 3600)), mentions="MAX_AUDIO_SECONDS"),
    Case("openai: beam_size 99 (extra field)", 422, "invalid_parameter",
         request=_upload("a.flac", clip_bytes, beam_size="99"), mentions="beam_size"),
    Case("binary body over MAX_AUDIO_SECONDS", 413, "payload_too_large",
         request=lambda url: requests.post(f"{url}/predict", data=flac_silence(LIMIT_S + 20), timeout=60,
                                           headers={"Content-Type": "audio/flac"}), mentions="MAX_AUDIO_SECONDS"),
    # json.loads raises RecursionError (not ValueError) on deep nesting.
    Case("JSON nested 100000 levels deep", 400, "invalid_body", request=_raw_json(DEEP_JSON)),
    Case("openai: 1 MB response_format (not echoed back)", 422, "invalid_parameter",
         request=_upload("a.flac", lambda: b"x", response_format="x" * 1_000_000), mentions="response_format"),
    Case("JSON NaN literal in an array", 400, "invalid_inputs", request=_raw_json('{"inputs": {"array": [0.1, NaN]}}')),
    Case("JSON with a lone surrogate in the prompt", 422, "invalid_parameter",
         request=_raw_json('{"inputs": "AAAA", "parameters": {"initial_prompt": "\\ud800"}}')),
    # Async jobs (POST /jobs, GET/DELETE /jobs/{id}): refused before a job exists, or failed with the error.
    Case("jobs: text/plain body", 415, "unsupported_media_type", request=_jobs_post(b"hello", "text/plain")),
    Case("jobs: zero-byte upload", 400, "empty_audio", request=_jobs_post(b"")),
    Case("jobs: beam_size 99", 422, "invalid_parameter", request=_jobs_post(b"x", beam_size="99"),
         mentions="beam_size"),
    Case("jobs: callback_url not http(s)", 422, "invalid_parameter",
         request=_jobs_post(b"x", callback_url="file:///etc/passwd"), mentions="callback_url"),
    Case("jobs: callback_url to cloud metadata (SSRF)", 422, "invalid_parameter",
         request=_jobs_post(b"x", callback_url="http://169.254.169.254/latest/meta-data"),
         mentions="JOBS_CALLBACK_ALLOW_INTERNAL"),
    Case("jobs: JSON without inputs", 400, "missing_inputs",
         request=_jobs_post(b'{"parameters": {}}', "application/json")),
    Case("jobs: JSON nested 100000 levels deep", 400, "invalid_body",
         request=_jobs_post(DEEP_JSON.encode(), "application/json")),
    Case("jobs: unknown job id", 404, "job_not_found",
         request=lambda url: requests.get(f"{url}/jobs/no-such-job", timeout=10), mentions="JOBS_TTL_S"),
    Case("jobs: delete an unknown job", 404, "job_not_found",
         request=lambda url: requests.delete(f"{url}/jobs/0000-not-a-job", timeout=10)),
    Case("jobs: text uploaded as audio (the job fails)", 415, "undecodable_audio",
         request=_job(lambda: b"not audio at all " * 30)),
    Case("jobs: decompression bomb (the job fails)", 413, "payload_too_large",
         request=_job(lambda: flac_silence(5 * 3600)), mentions="MAX_AUDIO_SECONDS"),
]
