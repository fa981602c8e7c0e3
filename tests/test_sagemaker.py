"""SageMaker: the server's /ping and /invocations, the ``serve`` entry as SageMaker starts it, and
inference.py packaged in model.tar.gz, run through the real sagemaker-huggingface-inference-toolkit.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest
import requests

from support.paths import ROOT
from support.serving import TEXT, free_port, live_server, wait_until
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import MB, ServerSettings


@pytest.fixture(scope="module")
def url(tiny_handler):
    with live_server(create_app(ServerSettings(), handler=tiny_handler)) as server:
        yield server.url


def test_ping(url):
    assert requests.get(f"{url}/ping", timeout=5).status_code == 200


@pytest.mark.parametrize("content_type", ["audio/x-audio", "audio/flac", "application/octet-stream"])
def test_invocations_audio(url, clip, content_type):
    response = requests.post(f"{url}/invocations", data=clip, headers={"Content-Type": content_type}, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["text"] == TEXT


def test_invocations_json_and_custom_attributes(url, clip):
    body = {"inputs": base64.b64encode(clip).decode(), "parameters": {"return_timestamps": "word"}}
    words = requests.post(f"{url}/invocations", json=body, timeout=60).json()
    assert [chunk["text"].strip() for chunk in words["chunks"]] == TEXT.split()
    attributes = "return_timestamps=none;beam_size=2"
    headers = {"Content-Type": "audio/x-audio", "X-Amzn-SageMaker-Custom-Attributes": attributes}
    plain = requests.post(f"{url}/invocations", data=clip, headers=headers, timeout=60).json()
    assert plain["chunks"] == [] and plain["warnings"] == []


def test_invocations_body_limit_is_sagemakers_6_mb(url):
    response = requests.post(f"{url}/invocations", data=b"\0" * (6 * MB + 1), headers={"Content-Type": "audio/x-audio"})
    assert response.status_code == 413 and response.json()["code"] == "body_too_large"


def _env(**values) -> dict:
    cache = os.environ.get("TEST_MODEL_CACHE", str(Path.home() / ".cache" / "whisper-endpoint"))
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MODEL_CACHE_DIR": cache, "ASR_MODEL": "embedded:tiny.en", **values}


def test_serve_entry_answers_ping_and_finishes_requests_on_sigterm(clip, tmp_path):
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    release = tmp_path / "release"  # tests/held_serve.py holds the first decode until it exists
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.held_serve", "serve"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env=_env(SAGEMAKER_BIND_TO_PORT=str(port), HOST="127.0.0.1", HOLD_RELEASE_FILE=str(release)),
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: _status(f"{url}/ping") == 200, timeout=120, interval=0.2)
        results = []
        requests_done = [threading.Thread(target=lambda: results.append(
            requests.post(f"{url}/invocations", data=clip, headers={"Content-Type": "audio/x-audio"}, timeout=60)))
            for _ in range(2)]
        for thread in requests_done:
            thread.start()
        wait_until(lambda: _busy(url), timeout=60)  # one decoding (held), one queued: a state, not a moment
        process.send_signal(signal.SIGTERM)  # what SageMaker and Inference Endpoints send on scale-down
        wait_until(lambda: "Shutting down" in (tmp_path / "serve.log").read_text(), timeout=60)
        assert results == []  # the signal came while both were in the server
        release.touch()
        for thread in requests_done:
            thread.join(60)
        assert [r.status_code for r in results] == [200, 200]
        # uvicorn finishes the requests, shuts down, then re-raises the signal it caught.
        assert process.wait(60) in (0, -signal.SIGTERM)
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    assert "Finished server process" in (tmp_path / "serve.log").read_text()


def _busy(url: str) -> bool:
    metrics = requests.get(f"{url}/metrics", timeout=5).text
    return "whisper_inflight_requests 1\n" in metrics and "whisper_queue_depth 1\n" in metrics


def _status(url: str) -> int | None:
    try:
        return requests.get(url, timeout=2).status_code
    except requests.ConnectionError:
        return None


# --- inference.py in model.tar.gz, through the toolkit ------------------------------------------


def _request(content_type: str, body: bytes, **headers) -> dict:
    return {"content_type": content_type, "body_b64": base64.b64encode(body).decode(), "headers": headers}


@pytest.mark.slow  # the SageMaker toolkit's model server
def test_inference_py_through_the_sagemaker_toolkit(clip, tmp_path):
    # Installed by scripts/setup.sh (requirements-sagemaker-test.txt): a missing install fails here, loudly.
    import mms  # noqa: F401
    import sagemaker_huggingface_inference_toolkit  # noqa: F401

    archive = tmp_path / "model.tar.gz"
    subprocess.run([sys.executable, "-m", "scripts.package_sagemaker", "--output", str(archive)], cwd=ROOT, check=True,
                   capture_output=True)
    model_dir = tmp_path / "model"
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        tar.extractall(model_dir, filter="data")
    assert {"code/inference.py", "code/requirements.txt", "code/requirements-runtime.txt", "code/handler.py",
            "code/config.py", "code/whisper_endpoint/static/index.html", "code/whisper_endpoint/static/ui/app.js"} <= set(names)

    words = json.dumps({"inputs": base64.b64encode(clip).decode(), "parameters": {"return_timestamps": "word"}})
    cases = [  # request, status, check
        (_request("audio/x-audio", clip), 200, lambda r: r["text"] == TEXT),
        (_request("application/json", words.encode()), 200, lambda r: len(r["chunks"]) == 5),
        (_request("audio/x-flac", clip, **{"X-Amzn-SageMaker-Custom-Attributes": "return_timestamps=none"}),
         200, lambda r: r["chunks"] == []),
        (_request("audio/x-audio", b"not audio at all"), 415, lambda r: r["code"] == "undecodable_audio"),
        (_request("application/json", b'{"inputs": "%%%"}'), 400, lambda r: r["code"] == "invalid_inputs"),
        (_request("audio/x-audio", clip, **{"X-Amzn-SageMaker-Custom-Attributes": "beam_size=99"}),
         422, lambda r: r["code"] == "invalid_parameter"),
        (_request("text/csv", b"inputs\nabc"), 415, lambda r: r["code"] == "unsupported_media_type"),
    ]
    # A fresh interpreter (-I: no cwd, no PYTHONPATH): only model.tar.gz's code/ provides the project.
    driver = subprocess.run(
        [sys.executable, "-I", str(ROOT / "tests" / "sagemaker_driver.py"), str(model_dir)],
        input=json.dumps([request for request, _, _ in cases]), capture_output=True, text=True,
        cwd=tmp_path, env=_env(), timeout=300,
    )
    assert driver.returncode == 0, driver.stderr[-3000:]
    responses = json.loads(driver.stdout)
    for (request, status, check), response in zip(cases, responses, strict=True):
        assert response["status"] == status, (request["content_type"], response)
        assert response["content_type"] == "application/json"
        assert check(json.loads(response["body"])), response
