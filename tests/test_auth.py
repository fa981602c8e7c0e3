"""API keys on the standalone server, with real clients (requests, openai SDK, InferenceClient) against
uvicorn on loopback: 401 without a valid Bearer key, the same answer for every kind of failure, probes open.
"""

from __future__ import annotations

import hmac

import openai
import pytest
import requests
from pydantic import ValidationError

from support.serving import TEXT, live_server
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving import auth
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

KEY, OTHER_KEY = "sk-test-3f9a1c7e5b2d4e6f8a0b", "sk-second-key-1234567890"
PROTECTED = [("post", "/"), ("post", "/predict"), ("post", "/invocations"),
             ("post", "/v1/audio/transcriptions"), ("post", "/v1/audio/translations"), ("get", "/v1/models"),
             ("post", "/jobs"), ("get", "/jobs/some-job"), ("delete", "/jobs/some-job")]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> JobSettings:
    return JobSettings(db=tmp_path_factory.mktemp("jobs") / "jobs.sqlite")


@pytest.fixture(scope="module")
def server(tiny_handler, jobs):
    app = create_app(ServerSettings(api_keys=f"{KEY},{OTHER_KEY}"), handler=tiny_handler, job_settings=jobs)
    with live_server(app) as running:
        yield running


BAD_CREDENTIALS = {
    "no header": {},
    "wrong key": {"Authorization": "Bearer sk-wrong-key-000000000000"},
    "key as a prefix of a valid one": {"Authorization": f"Bearer {KEY[:-1]}"},
    "valid key plus a suffix": {"Authorization": f"Bearer {KEY}x"},
    "Basic scheme": {"Authorization": f"Basic {KEY}"},
    "bare key without scheme": {"Authorization": KEY},
    "empty bearer": {"Authorization": "Bearer "},
    "x-api-key header instead": {"X-Api-Key": KEY},
}


@pytest.mark.parametrize("method, path", PROTECTED)
@pytest.mark.parametrize("headers", BAD_CREDENTIALS.values(), ids=BAD_CREDENTIALS.keys())
def test_inference_routes_need_a_valid_key_and_say_nothing_more(server, clip, method, path, headers):
    response = requests.request(method, server.url + path, data=clip, headers=headers, timeout=30)
    assert response.status_code == 401, response.text
    assert response.headers["WWW-Authenticate"] == "Bearer"
    error = response.json()["error"]
    message = error["message"] if isinstance(error, dict) else error  # OpenAI's shape on /v1
    assert message == auth.UnauthorizedError().message  # the same answer for every failure
    assert KEY not in response.text and OTHER_KEY not in response.text and "sk-wrong" not in response.text


@pytest.mark.parametrize("key", [KEY, OTHER_KEY])
def test_each_configured_key_is_accepted(server, clip, key):
    response = requests.post(f"{server.url}/predict?return_timestamps=none", data=clip,
                             headers={"Authorization": f"bearer {key}"}, timeout=60)  # scheme is case-insensitive
    assert response.status_code == 200, response.text
    assert response.json()["text"] == TEXT


@pytest.mark.parametrize("path", ["/health", "/ping", "/metrics"])
def test_probes_stay_open(server, path):
    assert requests.get(server.url + path, timeout=10).status_code == 200


def test_openai_sdk_sends_its_api_key_as_bearer(server, clip):
    good = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    assert good.audio.transcriptions.create(model="whisper-1", file=("a.flac", clip)).text == TEXT
    bad = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-not-a-valid-key-000", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        bad.audio.transcriptions.create(model="whisper-1", file=("a.flac", clip))
    assert info.value.code == "invalid_api_key"


def test_inference_client_with_a_token(server, clip, monkeypatch):
    from huggingface_hub import InferenceClient, constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # offline mode blocks loopback too
    monkeypatch.setattr(constants, "ENDPOINT", server.url)
    assert InferenceClient(base_url=server.url, api_key=KEY).automatic_speech_recognition(clip).text == TEXT
    with pytest.raises(Exception) as info:
        InferenceClient(base_url=server.url, api_key="hf_wrong_token_0000000").automatic_speech_recognition(clip)
    assert getattr(info.value, "response", None) is not None and info.value.response.status_code == 401


def test_no_keys_means_no_authentication(tiny_handler, clip, jobs):
    with live_server(create_app(ServerSettings(), handler=tiny_handler, job_settings=jobs)) as server:
        response = requests.post(f"{server.url}/?return_timestamps=none", data=clip, timeout=60)
    assert response.status_code == 200 and response.json()["text"] == TEXT


def test_keys_come_from_the_environment_comma_separated_and_stay_secret(monkeypatch):
    monkeypatch.setenv("API_KEYS", f" {KEY} ,{OTHER_KEY},")
    settings = ServerSettings()
    assert [key.get_secret_value() for key in settings.api_keys] == [KEY, OTHER_KEY]
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump())


def test_short_keys_are_refused_at_start_up_without_printing_them(monkeypatch):
    monkeypatch.setenv("API_KEYS", "tooshort-123")
    with pytest.raises(ValidationError, match="at least 16 characters") as info:
        ServerSettings()
    assert "tooshort-123" not in str(info.value)


def test_every_key_is_compared_in_constant_time(monkeypatch):
    keys = auth.APIKeys(ServerSettings(api_keys=f"{KEY},{OTHER_KEY}").api_keys)
    calls, compare = [], hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return compare(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert keys.matches(KEY) and keys.matches(OTHER_KEY) and not keys.matches("x")
    # No early exit, and fixed-length digests whatever the keys' lengths.
    assert calls == [(32, 32)] * 6
