"""Deployment: scripts/create_endpoint.py against a recording HTTP server on loopback (HF_ENDPOINT and
--endpoints-api point at it), its --dry-run, and the Dockerfile's contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import ROOT

TOKEN = "hf_DeployTestToken0123456789"


class Recorder(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def _answer(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.requests.append({"method": self.command, "path": self.path, "headers": headers,
                              "json": json.loads(body) if body else None})
        if self.path == "/api/whoami-v2":
            reply = {"type": "user", "name": "tester"}
        elif self.command == "POST" and self.path == "/v2/endpoint/tester":
            sent = json.loads(body)
            reply = {"name": sent["name"], "type": sent["type"], "healthRoute": "/health",
                     "model": {**sent["model"], "task": "custom"},
                     "status": {"state": "pending", "createdAt": "2026-11-30T00:00:00Z",
                                "updatedAt": "2026-11-30T00:00:00Z"}}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # no token file or cache of this machine
    Recorder.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Recorder.requests
    server.shutdown()


def run_script(url: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_HUB_TOKEN", "PORT")}
    env.update(HF_ENDPOINT=url, HF_TOKEN=TOKEN,
               ASR_MODEL="embedded:base", MAX_CONCURRENCY="2", DIARIZATION_MODEL="embedded")
    return subprocess.run(
        [sys.executable, "-m", "scripts.create_endpoint", "whisper-asr", "--repository", "me/whisper",
         "--endpoints-api", f"{url}/v2", *args],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=120,
    )


def test_creates_a_custom_endpoint_with_settings_in_env_and_the_token_in_secrets(recorder):
    url, requests = recorder
    done = run_script(url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "created tester/whisper-asr: pending"
    [create] = [r for r in requests if r["method"] == "POST"]
    assert create["path"] == "/v2/endpoint/tester"  # namespace from whoami at HF_ENDPOINT
    assert create["headers"]["authorization"] == f"Bearer {TOKEN}"
    payload = create["json"]
    assert payload["model"]["framework"] == "custom" and payload["model"]["task"] == "custom"
    assert payload["model"]["image"] == {"huggingface": {}}
    assert payload["model"]["env"] == {"ASR_MODEL": "embedded:base", "MAX_CONCURRENCY": "2",
                                       "DIARIZATION_MODEL": "embedded"}
    assert payload["model"]["secrets"] == {"HF_TOKEN": TOKEN}
    assert payload["compute"]["scaling"] == {"minReplica": 0, "maxReplica": 1, "scaleToZeroTimeout": 15}
    assert TOKEN not in done.stdout + done.stderr


def test_custom_container_image_with_port_and_health_route(recorder):
    url, requests = recorder
    done = run_script(url, "--image", "ghcr.io/me/whisper-endpoint:1", "--namespace", "tester")
    assert done.returncode == 0, done.stderr
    [create] = [r for r in requests if r["method"] == "POST"]
    assert create["json"]["model"]["image"] == {
        "custom": {"url": "ghcr.io/me/whisper-endpoint:1", "port": 8080, "healthRoute": "/health"}}
    assert not [r for r in requests if r["path"] == "/api/whoami-v2"]  # --namespace given


def test_dry_run_prints_the_request_masked_and_sends_nothing(recorder):
    url, requests = recorder
    done = run_script(url, "--dry-run", "--env", "MAX_QUEUE=8")
    assert done.returncode == 0, done.stderr
    assert requests == []
    [request] = json.loads(done.stdout)
    assert request["method"] == "POST" and request["url"] == f"{url}/v2/endpoint/%3Cyour-namespace%3E"
    assert request["headers"]["authorization"] == "Bearer ***"
    assert request["json"]["model"]["secrets"] == {"HF_TOKEN": "***"}
    assert request["json"]["model"]["env"]["MAX_QUEUE"] == "8"
    assert TOKEN not in done.stdout + done.stderr


def test_dockerfile_uses_the_setup_script_and_serves_on_8080():
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert "RUN bash scripts/setup.sh" in instructions
    assert "EXPOSE 8080" in instructions
    assert 'ENTRYPOINT [".venv/bin/whisper-endpoint"]' in instructions  # + CMD serve: SageMaker's `docker run IMAGE serve`
    assert 'CMD ["serve"]' in instructions
    assert any("/health" in line for line in lines if "urlopen" in line)
    assert ".venv" in (ROOT / ".dockerignore").read_text().split()
