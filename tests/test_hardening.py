"""The hostile- and odd-input corpus (tests/bad_inputs.py) against the handler and a live server.

Every case gets its documented status and error code; the server keeps answering valid requests and
its memory after the whole corpus (the serving tests' bad-input table included) stays within 20% of
before. A decompression bomb is refused with the default settings without the process's memory growing.
"""

from __future__ import annotations

import base64
import copy
import gc
import json
import subprocess
import sys
import textwrap

import psutil
import pytest
import requests

from support.bad_inputs import ANY, HTTP_CASES, LIMIT_S, PAYLOAD_CASES, TEXT, Case, clip_bytes
from support.paths import ROOT
from support.serving import live_server
from whisper_endpoint.core.errors import EndpointError
from whisper_endpoint.jobs import JobSettings
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings


@pytest.fixture(scope="module")
def handler(tiny_handler):
    """The session's tiny.en handler (models shared) with a real-time MAX_AUDIO_SECONDS."""
    limited = copy.copy(tiny_handler)
    limited.settings = tiny_handler.settings.model_copy(update={"max_audio_seconds": LIMIT_S})
    return limited


@pytest.fixture(scope="module")
def server(handler, tmp_path_factory):
    jobs = JobSettings(db=tmp_path_factory.mktemp("jobs") / "jobs.sqlite", poll_s=0.1)
    app = create_app(ServerSettings(body_timeout_s=1.0), handler=handler, job_settings=jobs)
    with live_server(app) as running:
        yield running


def check_result(case: Case, result: dict) -> None:
    if case.text is not ANY:
        assert result["text"] == case.text, case.name
    if case.warns is not None:
        assert case.warns in result["warnings"], (case.name, result["warnings"])


def check_error(case: Case, status: int, code: str, message: str) -> None:
    assert (status, code) == (case.status, case.code), f"{case.name}: {message[:300]}"
    assert message and len(message) < 2000, case.name  # names the problem, never echoes a huge value
    if case.mentions:
        assert case.mentions in message, message[:300]


@pytest.mark.parametrize("case", PAYLOAD_CASES, ids=[case.name for case in PAYLOAD_CASES])
def test_handler_gives_each_case_its_documented_status(handler, case):
    payload = case.payload()
    if case.status == 200:
        check_result(case, handler(payload))
        return
    with pytest.raises(EndpointError) as info:
        handler(payload)
    check_error(case, info.value.status, info.value.code, info.value.message)


def as_json(value):
    """A payload as the toolkit sends it: bytes become base64 strings."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value


def send(url: str, case: Case) -> requests.Response:
    if case.request is not None:
        return case.request(url)
    body = json.dumps(as_json(case.payload()))  # NaN stays NaN: Python's JSON reads it back
    return requests.post(url + "/", data=body, headers={"Content-Type": "application/json"}, timeout=120)


def outcome(case: Case, response: requests.Response) -> None:
    if case.gap is not None:  # a known defect (bad_inputs.Case.gap): the checks must still fail
        try:
            outcome(Case(**{**case.__dict__, "gap": None}), response)
        except AssertionError:
            return
        raise AssertionError(f"{case.name}: fixed ({case.gap})? Update docs/hardening.md and drop Case.gap")
    body = response.json()
    if response.status_code == 200:
        assert case.status == 200, f"{case.name}: 200 instead of {case.status}"
        check_result(case, body)
        return
    error = body["error"]
    if isinstance(error, dict):  # OpenAI's shape on /v1
        status, code, message = response.status_code, error["code"], error["message"]
    else:
        status, code, message = body["status"], body["code"], error
        assert status == response.status_code
    check_error(case, status, code, message)


def valid_request_succeeds(url: str) -> bool:
    response = requests.post(f"{url}/predict?return_timestamps=none", data=clip_bytes(), timeout=120)
    return response.status_code == 200 and response.json()["text"] == TEXT


def interleaved(cases: list[Case]) -> list[Case]:
    """The valid cases spread between the bad ones: each proves the server still answers."""
    valid = [case for case in cases if case.status == 200]
    bad = [case for case in cases if case.status != 200]
    step = -(-len(bad) // max(1, len(valid)))
    out = []
    for i, case in enumerate(valid):
        out += [case, *bad[i * step : (i + 1) * step]]
    return out + bad[len(valid) * step :]


def rss_mb() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


@pytest.mark.slow  # the whole corpus through a live server
def test_live_server_corpus_statuses_liveness_and_memory(server):
    from tests.test_server import BAD_INPUTS  # the serving tests' table: proved again here, not rebuilt

    for _ in range(2):  # warm up: buffers, thread pool, first decodes
        assert valid_request_succeeds(server.url)
    before = rss_mb()
    failures = []
    cases = interleaved([*PAYLOAD_CASES, *HTTP_CASES])
    for case in cases:
        try:
            outcome(case, send(server.url, case))
        except AssertionError as exc:
            failures.append(f"{case.name}: {exc}")
    for name, request, status, code in BAD_INPUTS:
        response = request(server.url, clip_bytes())
        body = response.json()
        got = body["error"]["code"] if isinstance(body["error"], dict) else body["code"]
        if (response.status_code, got) != (status, code):
            failures.append(f"{name}: {response.status_code} {got} instead of {status} {code}")
    assert failures == [], "\n".join(failures)
    assert valid_request_succeeds(server.url)
    after = rss_mb()
    print(f"\nserver process RSS: {before:.0f} MiB before, {after:.0f} MiB after "
          f"{len(cases) + len(BAD_INPUTS)} corpus requests")
    assert after <= before * 1.2


BOMB_SCRIPT = textwrap.dedent("""
    import base64, json, resource, sys
    from support.bad_inputs import flac_silence
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.core.errors import PayloadTooLargeError
    from whisper_endpoint.pipeline.request import parse_request

    data = flac_silence(5 * 3600)
    peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    before = peak()
    try:
        parse_request({"inputs": base64.b64encode(data).decode()}, max_seconds=ModelSettings().max_audio_seconds)
        outcome = "accepted"
    except PayloadTooLargeError as exc:
        outcome = exc.message
    print(json.dumps({"bytes": len(data), "limit_s": ModelSettings().max_audio_seconds,
                      "outcome": outcome, "peak_growth_mb": peak() - before}))
""")


def test_decompression_bomb_is_refused_with_default_settings_before_memory_grows():
    # A fresh process, so that its peak memory (ru_maxrss) is this request's alone.
    run = subprocess.run([sys.executable, "-c", BOMB_SCRIPT], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["bytes"] < 100_000 and 5 * 3600 > result["limit_s"]
    assert "MAX_AUDIO_SECONDS" in result["outcome"]
    assert result["peak_growth_mb"] < 100, result


class RunsOutOfMemory:
    """The real handler, except that requests asking for it run out of memory the way torch does."""

    def __init__(self, handler):
        self.handler = handler

    def __call__(self, data):
        kind = (data.get("parameters") or {}).get("oom")
        if kind == "cuda":
            import torch

            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        if kind == "host":
            raise MemoryError()
        return self.handler(data)


@pytest.mark.parametrize("kind", ["cuda", "host"])
def test_out_of_memory_is_503_with_retry_after_not_a_client_error(tiny_handler, tmp_path, kind):
    # The reference handler answered 400 here, which tells the client not to retry a request that may
    # well succeed a moment later.
    app = create_app(ServerSettings(), handler=RunsOutOfMemory(tiny_handler),
                     job_settings=JobSettings(db=tmp_path / "jobs.sqlite"))
    with live_server(app) as running:
        response = requests.post(f"{running.url}/predict?oom={kind}", data=clip_bytes(), timeout=60)
        assert (response.status_code, response.json()["code"]) == (503, "out_of_memory")
        assert response.headers["Retry-After"] == "5"
        upload = requests.post(f"{running.url}/v1/audio/transcriptions", data={"oom": kind},
                               files={"file": ("a.flac", clip_bytes())}, timeout=60)
        assert upload.status_code == 503 and upload.json()["error"]["type"] == "server_error"
        assert valid_request_succeeds(running.url)
