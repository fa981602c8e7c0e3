"""Load a running server: N requests of one clip from C threads; latency, throughput, errors, memory.

    python -m scripts.load_test [--url http://127.0.0.1:8080] [--file CLIP] [--requests 200]
                                [--concurrency 8] [--route /predict] [--pid SERVER_PID]

Each request posts the clip as a binary body. Latency is measured per request from send to full
response, so with MAX_CONCURRENCY=1 it includes the time spent queued. The server's resident memory
(VmRSS, Linux) is read after the first 20 responses and after the last one when --pid is given.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import requests

from support.load import run_load

DEFAULT_CLIP = Path(__file__).resolve().parents[1] / "audio/clips/asterisk_all-circuits-busy-now.flac"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--route", default="/predict")
    parser.add_argument("--file", type=Path, default=DEFAULT_CLIP)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pid", type=int, help="the server's process id, for its memory")
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(message)s")
    logging.getLogger("support.load").setLevel(logging.INFO)  # the client's progress lines
    health = requests.get(f"{args.url}/health", timeout=10).json()
    report = run_load(args.url + args.route, args.file.read_bytes(), args.requests, args.concurrency, args.pid)
    print(json.dumps({"server": health, "clip": args.file.name, **report}, indent=2))


if __name__ == "__main__":
    main()
