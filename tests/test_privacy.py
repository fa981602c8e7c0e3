"""Secrets stay secret and nothing phones home.

One run with a Hugging Face token and API keys set captures every log record (tracebacks included),
everything written to stdout/stderr, and every response (bodies and headers) of: failed model loads
(a private Hub model offline, a gated diarization pipeline), a server error whose
exception text carries the token, client errors, 401s and a valid request; neither secret appears.
pytest-socket (tests/conftest.py) lets tests reach loopback only; the last tests prove it is on.
"""

from __future__ import annotations

import logging
import socket
import traceback

import pytest
import requests

from support.audio import read_clip
from support.serving import CLIP, live_server, wait_until
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

HF_SECRET = "hf_PrivacyTestTokenXq7Lw2Zr9Kd4Nm8Pv"
API_SECRET = "sk-privacy-test-key-5Jt3Hc8Wq1Ys6Bn0"
SECRETS = (HF_SECRET, API_SECRET)


class Leaky:
    """The real handler, except that one kind of request fails with the token in the exception text."""

    def __init__(self, handler):
        self.handler = handler

    def __call__(self, data):
        if (data.get("parameters") or {}).get("explode"):
            raise RuntimeError(f"backend crashed while using token {HF_SECRET}")
        return self.handler(data)


@pytest.fixture
def secrets_env(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", HF_SECRET)
    monkeypatch.setenv("API_KEYS", API_SECRET)


def failed_load(settings_factory, **values):
    """A handler load that fails, with the token set: what its exception shows."""
    from whisper_endpoint.handler import EndpointHandler

    def load():
        return EndpointHandler(settings=settings_factory(hf_token=HF_SECRET, **values))

    return load


def loading_failure_seen(app_url: str) -> list[str]:
    seen = []
    wait_until(lambda: requests.get(f"{app_url}/health", timeout=5).status_code == 503
               and requests.get(f"{app_url}/health", timeout=5).json()["code"] == "model_load_failed", timeout=120)
    for path in ("/health", "/ping"):
        response = requests.get(app_url + path, timeout=5)
        seen.append(f"{response.status_code} {dict(response.headers)} {response.text}")
    return seen


def test_no_secret_in_any_log_or_response(secrets_env, settings_factory, tiny_handler, caplog, capfd, tmp_path):
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    jobs = JobSettings(db=tmp_path / "jobs.sqlite")

    from whisper_endpoint.core.config import ModelSettings

    settings = ModelSettings()
    seen += [repr(settings), str(settings), settings.model_dump_json(), repr(ServerSettings())]

    # Failed model loads: a private Hub model (offline: not cached), a gated diarization pipeline.
    # Each through the server's background loader, which logs it, and once directly.
    loads = [
        failed_load(settings_factory, asr_model="private-org/whisper-private"),
        failed_load(settings_factory, asr_model="embedded:tiny.en",
                    diarization_model="pyannote/speaker-diarization-community-1"),
    ]
    for load in loads:
        with live_server(create_app(ServerSettings(), load=load, job_settings=jobs)) as server:
            seen += loading_failure_seen(server.url)
    with pytest.raises(Exception) as failure:
        loads[0]()
    seen += ["".join(traceback.format_exception(failure.value)), repr(failure.value)]  # what an operator prints

    # A serving run with API keys: a server error carrying the token, client errors, 401s, a success.
    clip = read_clip(CLIP)
    auth = {"Authorization": f"Bearer {API_SECRET}"}
    requests_made = [
        ("post", "/predict?return_timestamps=none", clip, auth, 200),
        ("post", "/predict?explode=true", clip, auth, 500),
        ("post", "/predict?beam_size=99", clip, auth, 422),
        ("post", "/predict", b"not audio" * 10, auth, 415),
        ("post", "/predict", clip, {"Authorization": f"Bearer {API_SECRET[:-1]}"}, 401),
        ("post", "/predict", clip, {"Authorization": f"Basic {HF_SECRET}"}, 401),
        ("post", f"/predict?token={HF_SECRET}&beam_size=99", clip, auth, 422),
        ("post", "/jobs", clip, auth, 202),
        ("get", "/metrics", None, {}, 200),
    ]
    with live_server(create_app(ServerSettings(), handler=Leaky(tiny_handler), job_settings=jobs)) as server:
        for method, path, body, headers, status in requests_made:
            response = requests.request(method, server.url + path, data=body, headers=headers, timeout=60)
            assert response.status_code == status, (path, response.text)
            seen.append(f"{response.status_code} {dict(response.headers)} {response.text}")

    out, err = capfd.readouterr()
    records = [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    logged = "\n".join([*records, caplog.text, out, err])
    # The run did produce the events this test is about.
    assert "model loading failed" in logged and "unexpected error" in logged
    for secret in SECRETS:
        assert secret not in logged
        assert not [text for text in seen if secret in text]
    # The token in the query string is the client's own echo in a warning: it must not come back either.
    assert all("token" not in text or HF_SECRET not in text for text in seen)


def test_only_loopback_can_be_reached():
    import pytest_socket

    with pytest.raises(pytest_socket.SocketConnectBlockedError):
        socket.create_connection(("192.0.2.1", 443), timeout=2)  # TEST-NET-1: never a real host
    with pytest.raises(pytest_socket.SocketConnectBlockedError):
        requests.get("https://192.0.2.1/api/models", timeout=5)  # no DNS needed: the address itself


def test_loopback_stays_reachable(tiny_handler, tmp_path):
    app = create_app(ServerSettings(), handler=tiny_handler, job_settings=JobSettings(db=tmp_path / "j.sqlite"))
    with live_server(app) as server:
        for host in ("127.0.0.1", "localhost"):
            url = server.url.replace("127.0.0.1", host)
            assert requests.get(f"{url}/health", timeout=5).status_code == 200
