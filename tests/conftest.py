import io
import json
import os
import queue
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import av
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Servers built with the default settings keep their speaker library in a folder of this run, never in the
# user's cache (where enrolled voices would name speakers in other tests).
os.environ.setdefault("SPEAKERS_DB", str(Path(tempfile.mkdtemp(prefix="speakers-")) / "speakers.sqlite"))

# Tests may only reach loopback: live servers, the SageMaker worker, the Ray cluster (pytest-socket
# guards socket.connect in this process; test_privacy.py proves the guard is on).
LOOPBACK_HOSTS = "127.0.0.1,::1,localhost"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if hasattr(config.option, "allow_hosts") and not config.option.allow_hosts:
        config.option.allow_hosts = LOOPBACK_HOSTS
        config.option.allow_unix_socket = True  # local IPC (multiprocessing, Ray's workers)


AUDIO = ROOT / "audio"
CLIPS = AUDIO / "clips"


def clip_refs() -> dict[str, str]:
    return {item["file"]: item["text"] for item in json.loads((CLIPS / "refs.json").read_text())}


def read_clip(name: str) -> bytes:
    return (CLIPS / name).read_bytes()


def decode_reference(path: Path) -> np.ndarray:
    """faster-whisper's own decoder: the yardstick for ours."""
    from faster_whisper import decode_audio

    return decode_audio(str(path))


def encode(samples: np.ndarray, rate: int, container: str, codec: str, channels: int = 1,
           options: dict | None = None) -> bytes:
    """Encode float samples (channels, n) or (n,) into an in-memory file with PyAV's FFmpeg (``options``:
    the muxer's, e.g. ``{"live": "1"}`` for WebM as MediaRecorder writes it, without a duration)."""
    data = np.atleast_2d(samples).astype(np.float32)
    if data.shape[0] == 1 and channels > 1:
        data = np.repeat(data, channels, axis=0)
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container, options=options or {}) as out:
        stream = out.add_stream(codec, rate=rate, layout="stereo" if channels == 2 else "mono")
        fmt = stream.codec_context.codec.audio_formats[0].name
        frames = []
        if data.shape[1]:
            frames = [av.AudioFrame.from_ndarray(np.ascontiguousarray(data.T.reshape(1, -1)), format="flt", layout=stream.layout.name)]
            frames[0].sample_rate = rate
        resampler = av.AudioResampler(format=fmt, layout=stream.layout.name, rate=rate)
        for converted in [c for f in frames for c in resampler.resample(f)] + resampler.resample(None):
            for packet in stream.encode(converted):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def clip() -> bytes:
    """The serving tests' clip (serving_helpers.CLIP) as a file's bytes."""
    from tests.serving_helpers import CLIP

    return read_clip(CLIP)


@pytest.fixture(scope="session")
def settings_factory(tmp_path_factory):
    from whisper_endpoint.core.config import ModelSettings

    cache = Path(os.environ.get("TEST_MODEL_CACHE", Path.home() / ".cache" / "whisper-endpoint"))

    def make(**values):
        return ModelSettings(model_cache_dir=cache, **values)

    return make


@pytest.fixture(scope="session")
def tiny_handler(settings_factory):
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=settings_factory(asr_model="embedded:tiny.en"))


@pytest.fixture(scope="session")
def tiny_tf(settings_factory):
    """tiny.en on the transformers backend."""
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=settings_factory(asr_model="embedded:tiny.en", asr_backend="transformers"))


@pytest.fixture(scope="session")
def base_handler(settings_factory):
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=settings_factory(asr_model="embedded:base"))


@pytest.fixture(scope="session")
def diarizing_handler(settings_factory):
    """tiny.en with the embedded diarization, on two CTranslate2 workers (requests may run at once)."""
    from whisper_endpoint.handler import EndpointHandler

    settings = settings_factory(asr_model="embedded:tiny.en", diarization_model="embedded", num_workers=2)
    return EndpointHandler(settings=settings)


@pytest.fixture
def short_windows(monkeypatch):
    """Windows as short as 4 s (issue 17's floor is 15 s, ``cost.MIN_WINDOW_S``): the tests of progress,
    cancellation and concurrency need several windows from a few seconds of audio, cheaply. The floor
    itself is tested in test_bounds.py."""
    from whisper_endpoint.backends import cost

    monkeypatch.setattr(cost, "MIN_WINDOW_S", 4)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL cluster for the session (tests/postgres_server.py); missing programs fail the
    tests that need it (never a silent skip)."""
    from tests.postgres_server import Postgres

    server = Postgres(durable=False).start()
    yield server
    server.stop()


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.put(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def callbacks():
    """A webhook receiver on loopback: ``.url``, and ``.received`` (a queue of the bodies)."""
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    receiver.received = queue.Queue()
    receiver.url = f"http://127.0.0.1:{receiver.server_address[1]}/done"
    thread = threading.Thread(target=receiver.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.shutdown()
