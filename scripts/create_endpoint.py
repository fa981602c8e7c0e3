"""Create a Hugging Face Inference Endpoint for this handler with ``huggingface_hub.create_inference_endpoint``.

    scripts/make_endpoint_repo.sh out/endpoint
    python -m scripts.create_endpoint NAME --repository USER/REPO --push out/endpoint [--dry-run] [options]

Two ways to run it:
- the managed toolkit (default): REPO holds the endpoint repository that scripts/make_endpoint_repo.sh
  writes (handler.py at the top, requirements.txt, the model files); ``--push DIR`` uploads DIR to REPO
  first (a private repository is created when there is none; files that DIR no longer has are removed
  from it) and pins the endpoint to the commit it made; task and framework "custom";
- a custom container (``--image``): the Dockerfile's image, which serves on ``--port`` (8080) with
  ``/health`` as its health route; REPO is mounted at /repository.

The model settings travel in ``env``: every ModelSettings / ServerSettings variable set in this shell
(ASR_MODEL, DIARIZATION_MODEL, MAX_CONCURRENCY...) plus ``--env KEY=VALUE``. ``HF_TOKEN`` (from the
environment or ``hf auth login``) goes in ``secrets``, never in ``env``, and authenticates the call.
Scale-to-zero is on by default (``--min-replica 0``, ``--scale-to-zero-timeout 15`` minutes).

``--dry-run`` prints the HTTP request huggingface_hub would send (token and secrets masked) and, with
``--push``, the files it would upload, and sends nothing. ``--endpoints-api URL`` replaces the Inference Endpoints API address, which HF_ENDPOINT does not
change (huggingface_hub hard-codes it); tests point both at a recording server on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from whisper_endpoint.core.config import ModelSettings  # noqa: E402
from whisper_endpoint.serving.settings import ServerSettings  # noqa: E402

SECRET_NAMES = ("HF_TOKEN", "HF_HUB_TOKEN")
# Local to this machine or set by the platform: never forwarded.
LOCAL_NAMES = ("HOST", "PORT", "MODEL_DIR", "MODEL_CACHE_DIR")
MASK = "***"


def settings_env(overrides: list[str]) -> dict[str, str]:
    """Settings variables set in this environment, then ``--env`` pairs; secrets never."""
    names = {name.upper() for name in (*ModelSettings.model_fields, *ServerSettings.model_fields)}
    names -= {*SECRET_NAMES, *LOCAL_NAMES}
    env = {name: value for name, value in os.environ.items() if name in names}
    for pair in overrides:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--env expects KEY=VALUE, got {pair!r}")
        if name.upper() in SECRET_NAMES:
            raise SystemExit(f"{name} is a secret: set it in the environment, it goes to 'secrets'")
        env[name] = value
    return env


def endpoint_arguments(args: argparse.Namespace, token: str | None) -> dict:
    arguments = dict(
        repository=args.repository,
        revision=args.revision,
        framework="custom",
        task="custom",
        accelerator=args.accelerator,
        vendor=args.vendor,
        region=args.region,
        instance_size=args.instance_size,
        instance_type=args.instance_type,
        min_replica=args.min_replica,
        max_replica=args.max_replica,
        scale_to_zero_timeout=args.scale_to_zero_timeout if args.min_replica == 0 else None,
        type=args.type,
        env=settings_env(args.env),
        secrets={"HF_TOKEN": token} if token else None,
        namespace=args.namespace,
    )
    if args.image:
        arguments["custom_image"] = {"url": args.image, "port": args.port, "healthRoute": "/health"}
    return arguments


def mask(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return text


def dry_run(name: str, arguments: dict, token: str | None) -> list[dict]:
    """Let huggingface_hub build its request against a transport that records it and sends nothing."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.utils import set_client_factory

    try:  # the HTTP library huggingface_hub is built on: httpx2 in 2.x builds that ship it, else httpx
        import httpx2 as httpx
    except ImportError:
        import httpx

    namespace = arguments["namespace"] or "<your-namespace>"
    sent: list[dict] = []

    def record(request):
        if not str(request.url).startswith(constants.INFERENCE_ENDPOINTS_ENDPOINT):
            return httpx.Response(404)  # huggingface_hub's own side calls (agent detection): not ours to show
        sent.append({
            "method": request.method,
            "url": str(request.url),
            "headers": {k: v for k, v in request.headers.items() if k.lower() in ("authorization", "content-type")},
            "json": json.loads(request.content) if request.content else None,
        })
        return httpx.Response(200, json=_fake_endpoint(name, namespace, arguments))

    set_client_factory(lambda: httpx.Client(transport=httpx.MockTransport(record)))
    HfApi().create_inference_endpoint(name, **{**arguments, "namespace": namespace}, token=token or "hf_" + "x" * 8)
    return sent


def _fake_endpoint(name: str, namespace: str, arguments: dict) -> dict:
    return {
        "name": name, "namespace": namespace, "type": arguments["type"], "healthRoute": "/health",
        "model": {"repository": arguments["repository"], "revision": arguments["revision"],
                  "framework": "custom", "task": "custom"},
        "status": {"state": "pending", "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z"},
    }


def push(folder: Path, repository: str, token: str) -> str:
    """Upload the endpoint repository as it is in ``folder``; the id of the commit that holds it."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repository, private=True, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repository, folder_path=folder, delete_patterns="*",  # the Hub copy becomes exactly folder
        commit_message="whisper-endpoint: repository from scripts/make_endpoint_repo.sh",
    )
    return commit.oid


def push_plan(folder: Path) -> dict:
    """What --push would upload (for --dry-run)."""
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return {"push": str(folder), "files": len(files), "megabytes": round(sum(p.stat().st_size for p in files) / 1e6, 1),
            "paths": [str(path.relative_to(folder)) for path in files]}


def check_push_folder(folder: Path) -> None:
    if not (folder / "handler.py").is_file() or not (folder / "requirements.txt").is_file():
        raise SystemExit(f"--push {folder}: not an endpoint repository (scripts/make_endpoint_repo.sh writes one)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", help="endpoint name")
    parser.add_argument("--repository", required=True, help="Hub repository with this project (or the model)")
    parser.add_argument("--revision", help="commit or branch to serve (default: the commit --push made, else main)")
    parser.add_argument("--push", type=Path, metavar="DIR",
                        help="upload DIR (scripts/make_endpoint_repo.sh's output) to --repository first")
    parser.add_argument("--namespace", help="user or organization (default: the token's user)")
    parser.add_argument("--image", help="custom container image URL (the Dockerfile's); default: managed toolkit")
    parser.add_argument("--port", type=int, default=8080, help="custom container's port")
    parser.add_argument("--vendor", default="aws")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--instance-type", default="intel-spr")
    parser.add_argument("--instance-size", default="x4")
    parser.add_argument("--min-replica", type=int, default=0, help="0 scales to zero when idle")
    parser.add_argument("--max-replica", type=int, default=1)
    parser.add_argument("--scale-to-zero-timeout", type=int, default=15, help="idle minutes before scaling to zero")
    parser.add_argument("--type", default="authenticated", choices=["authenticated", "public", "private"])
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="extra setting for env")
    parser.add_argument("--endpoints-api", help="Inference Endpoints API base URL (default: huggingface_hub's)")
    parser.add_argument("--dry-run", action="store_true", help="print the requests, send nothing")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from huggingface_hub import constants, create_inference_endpoint, get_token

    if args.endpoints_api:
        constants.INFERENCE_ENDPOINTS_ENDPOINT = args.endpoints_api.rstrip("/")
    token = get_token()
    if args.push:
        check_push_folder(args.push)
    if args.dry_run:
        requests = dry_run(args.name, endpoint_arguments(args, token), token)
        print(mask(json.dumps(([push_plan(args.push)] if args.push else []) + requests, indent=2), [token]))
        return 0
    if token is None:
        print("error: no Hugging Face token: set HF_TOKEN or run `hf auth login`", file=sys.stderr)
        return 2
    if args.push:
        commit = push(args.push, args.repository, token)
        print(f"pushed {args.push} to {args.repository} at {commit}")
        args.revision = args.revision or commit
    arguments = endpoint_arguments(args, token)
    endpoint = create_inference_endpoint(args.name, **arguments, token=token)
    print(f"created {endpoint.namespace}/{endpoint.name}: {endpoint.status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
