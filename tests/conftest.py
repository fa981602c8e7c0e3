import gc
import json
import os
import queue
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from support.audio import read_clip
from tests import tiers

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


def pytest_collection_finish(session):
    """Freeze what the imports made before the first test: the decoders run ``gc.collect()`` after every
    file (PyAV's resampler buffers, faster-whisper issue #390), and with torch, pyannote and transformers
    imported each full collection walked their ~700,000 objects, never garbage, 0.3-0.6 s a decode,
    in most tests. Frozen, a collection walks only what the tests made since (still collected)."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """The slow tier: every test that uses something slow (tests/tiers.py) is marked ``slow``."""
    for item in items:
        found = tiers.item_reasons(item)
        if found and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow(reason=", ".join(found)))


_LONG_FAST_TESTS: list[tuple[str, float]] = []


def pytest_runtest_logreport(report):
    # setup (fixtures) and call together: what the fast tier pays for the test
    if report.when in ("setup", "call") and "slow" not in report.keywords:
        _LONG_FAST_TESTS.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter):
    totals: dict[str, float] = {}
    for nodeid, seconds in _LONG_FAST_TESTS:
        totals[nodeid] = totals.get(nodeid, 0.0) + seconds
    long = sorted((s, n) for n, s in totals.items() if s > tiers.FAST_LIMIT_S)
    if long:
        terminalreporter.section("fast tests that took long (mark them slow, or make them fast)")
        for seconds, nodeid in reversed(long):
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")


@pytest.fixture(scope="session")
def clip() -> bytes:
    """The serving tests' clip (serving_helpers.CLIP) as a file's bytes."""
    from support.serving import CLIP

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
def base_tf(settings_factory):
    """base (multilingual) on the transformers backend."""
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=settings_factory(asr_model="embedded:base", asr_backend="transformers"))


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
    from whisper_endpoint.asr import cost

    monkeypatch.setattr(cost, "MIN_WINDOW_S", 4)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL cluster for the session (tests/postgres_server.py); missing programs fail the
    tests that need it (never a silent skip)."""
    from support.postgres import Postgres

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
