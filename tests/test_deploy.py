"""Deployment: scripts/create_endpoint.py against a recording HTTP server on loopback (HF_ENDPOINT and
--endpoints-api point at it), its --dry-run, and the Dockerfile's contract."""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from support.paths import ROOT

TOKEN = "hf_DeployTestToken0123456789"
COMMIT = "c0ffee" * 6 + "c0de"


class Recorder(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def _answer(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        ndjson = "ndjson" in headers.get("content-type", "")  # a commit: one JSON object per line
        parsed = [json.loads(line) for line in body.splitlines()] if ndjson else json.loads(body) if body else None
        self.requests.append({"method": self.command, "path": self.path, "headers": headers, "json": parsed})
        path = self.path.split("?")[0]
        if self.path == "/api/whoami-v2":
            reply = {"type": "user", "name": "tester"}
        elif path == "/api/repos/create":
            reply = {"url": f"http://{self.headers['Host']}/me/whisper", "name": "me/whisper"}
        elif path == "/api/validate-yaml":  # the model card's metadata, which the Hub checks before a commit
            reply = {"warnings": [], "valid": isinstance(card_metadata(parsed["content"]), dict)}
        elif path.startswith("/api/models/me/whisper/tree/"):
            reply = []  # a new repository: nothing to delete
        elif path.startswith("/api/models/me/whisper/preupload/"):  # every file inline, as the Hub does for small ones
            reply = {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                               for f in parsed["files"]]}
        elif path.startswith("/api/models/me/whisper/commit/"):
            reply = {"commitUrl": f"http://{self.headers['Host']}/me/whisper/commit/{COMMIT}", "commitOid": COMMIT}
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


def card_metadata(readme: str):
    import yaml

    _, front, _ = readme.split("---\n", 2)
    return yaml.safe_load(front)


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
    # One commit with every file inline (huggingface_hub's path without hf_xet), which a recorder can answer.
    env.update(HF_ENDPOINT=url, HF_TOKEN=TOKEN, HF_HUB_DISABLE_XET="1",
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


@pytest.fixture(scope="module")
def code_only_repo(tmp_path_factory):
    """scripts/make_endpoint_repo.sh's output without model files (ASR_MODEL names a Hub model then)."""
    out = tmp_path_factory.mktemp("push") / "repo"
    done = subprocess.run(["bash", str(ROOT / "scripts" / "make_endpoint_repo.sh"), str(out), "--asr-model", "none",
                           "--no-diarization"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    return out


def test_push_uploads_the_endpoint_repository_and_pins_the_endpoint_to_that_commit(recorder, code_only_repo):
    url, requests = recorder
    done = run_script(url, "--push", str(code_only_repo))
    assert done.returncode == 0, done.stderr
    assert f"pushed {code_only_repo} to me/whisper at {COMMIT}" in done.stdout
    cards = [r["json"]["content"] for r in requests if r["path"] == "/api/validate-yaml"]
    assert cards and all("endpoints-template" in card_metadata(card)["tags"] for card in cards)
    [create_repo] = [r for r in requests if r["path"] == "/api/repos/create"]
    assert create_repo["json"]["name"] == "whisper"
    # huggingface_hub 1.x and later say private as a visibility, earlier ones as a flag
    assert create_repo["json"].get("visibility") == "private" or create_repo["json"].get("private") is True
    [commit] = [r for r in requests if r["path"].startswith("/api/models/me/whisper/commit/")]
    sent = {line["value"]["path"]: base64.b64decode(line["value"]["content"])
            for line in commit["json"] if line["key"] == "file"}
    expected = {str(p.relative_to(code_only_repo)): p.read_bytes() for p in code_only_repo.rglob("*") if p.is_file()}
    assert sent == expected  # every file, byte for byte, and nothing else
    [create] = [r for r in requests if r["path"] == "/v2/endpoint/tester"]
    assert create["json"]["model"]["repository"] == "me/whisper"
    assert create["json"]["model"]["revision"] == COMMIT
    ours = [r for r in requests if r["path"].startswith(("/api/repos/", "/api/models/", "/v2/"))]
    assert len(ours) >= 4 and all(r["headers"].get("authorization") == f"Bearer {TOKEN}" for r in ours)
    assert TOKEN not in done.stdout + done.stderr


def test_push_dry_run_lists_the_files_and_sends_nothing(recorder, code_only_repo):
    url, requests = recorder
    done = run_script(url, "--push", str(code_only_repo), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert requests == []
    plan, request = json.loads(done.stdout)
    assert plan["push"] == str(code_only_repo) and "handler.py" in plan["paths"] and "requirements.txt" in plan["paths"]
    assert request["method"] == "POST"


def test_push_refuses_a_folder_that_is_not_an_endpoint_repository(recorder, tmp_path):
    url, requests = recorder
    done = run_script(url, "--push", str(tmp_path))
    assert done.returncode != 0 and "not an endpoint repository" in done.stderr
    assert requests == []


def test_dockerfile_uses_the_setup_script_and_serves_on_8080():
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert "RUN bash scripts/setup.sh" in instructions
    assert "EXPOSE 8080" in instructions
    assert 'ENTRYPOINT [".venv/bin/whisper-endpoint"]' in instructions  # + CMD serve: SageMaker's `docker run IMAGE serve`
    assert 'CMD ["serve"]' in instructions
    assert any("/health" in line for line in lines if "urlopen" in line)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored
    # The image serves the web page: its files reach the image (no pattern matches them or a folder above).
    page = "whisper_endpoint/static/ui/app.js"
    prefixes = [page.rsplit("/", depth)[0] for depth in range(page.count("/") + 1)]
    assert not [p for p in ignored for path in prefixes if fnmatch.fnmatch(path, p.removeprefix("**/"))]
