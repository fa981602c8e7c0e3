"""``python -m bench.resume [--minutes 60] [--diarize] [--kill-at 0.667]``: a long job whose server is killed
(SIGKILL) part way, finished by a second server on the same SQLite store (issue 62).

Runs the job once uninterrupted on a server (T1, from submission to success), then again on a fresh
store, kills that server ``--kill-at`` x T1 after submission, starts a second server and times it from its
start to the job's success (T2: model loading, recovery and the blocks left). Reports T2 / T1, the blocks
the second server took from the store, whether both results are the same, and where not, whether every
chunk that differs was decoded by sampling (Whisper's temperature fallback: each CTranslate2 thread draws
from a generator of its own, so a block decoded on the second server draws other samples than the same
block decoded after the others). The recording is bench/long_requests.py's (cached in ``--cache``).
Writes results/resume.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench.items.serving import wait_ready
from bench.long_requests import recording
from support.serving import stop_process

ROOT = Path(__file__).resolve().parents[1]


def server(folder: Path, port: int, diarize: bool, log) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PORT": str(port), "HOST": "127.0.0.1",
           "JOBS_DB": str(folder / "jobs.sqlite"), "JOBS_POLL_S": "0.5", "JOBS_LEASE_S": "30"}
    if diarize:
        env["DIARIZATION_MODEL"] = "embedded"
    return subprocess.Popen([sys.executable, "-m", "whisper_endpoint.serving"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def finished(url: str, job_id: str) -> dict:
    while True:
        job = requests.get(f"{url}/jobs/{job_id}", timeout=10).json()
        if job["status"] in ("succeeded", "failed"):
            return job
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--diarize", action="store_true")
    parser.add_argument("--kill-at", type=float, default=2 / 3)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "long_requests"))
    parser.add_argument("--out", default=str(ROOT / "results" / "resume.json"))
    args = parser.parse_args()
    from support.results import write

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    body = recording(args.minutes, cache).read_bytes()
    url = f"http://127.0.0.1:{args.port}"
    params = {"return_confidence": "true", **({"diarize": "true"} if args.diarize else {})}
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        log_path = folder / "server.log"
        log = log_path.open("w")
        (folder / "whole").mkdir()
        first = server(folder / "whole", args.port, args.diarize, log)
        wait_ready(first, url, log_path)
        submitted = time.perf_counter()
        job = requests.post(f"{url}/jobs", data=body, params=params, headers={"Content-Type": "audio/flac"}).json()
        whole = finished(url, job["id"])
        t1 = time.perf_counter() - submitted
        stop_process(first, timeout=60)
        (folder / "killed").mkdir()
        killed = server(folder / "killed", args.port, args.diarize, log)
        wait_ready(killed, url, log_path)
        submitted = time.perf_counter()
        job = requests.post(f"{url}/jobs", data=body, params=params, headers={"Content-Type": "audio/flac"}).json()
        time.sleep(max(0.0, args.kill_at * t1 - (time.perf_counter() - submitted)))
        progress = requests.get(f"{url}/jobs/{job['id']}", timeout=10).json().get("progress")
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
        started = time.perf_counter()
        second = server(folder / "killed", args.port, args.diarize, log)
        wait_ready(second, url, log_path)
        resumed = finished(url, job["id"])
        t2 = time.perf_counter() - started
        stop_process(second, timeout=60)
        log.close()
        lines = log_path.read_text().splitlines()
    taken = sum(f"job {job['id']}: block" in line and "taken from the store" in line for line in lines)
    result = {
        "minutes": args.minutes, "diarized": args.diarize, "kill_at": round(args.kill_at, 3),
        "uninterrupted_s": round(t1, 1), "progress_at_kill": progress, "second_server_s": round(t2, 1),
        "ratio": round(t2 / t1, 3), "blocks_taken_from_the_store": taken,
        "blocks": resumed["result"]["decoding"].get("blocks") if resumed["status"] == "succeeded" else None,
        "attempts": resumed["attempts"], "same_result": resumed.get("result") == whole.get("result"),
        "differences": _differences(whole.get("result"), resumed.get("result")),
        "chunks_differing": _differing_chunks(whole.get("result"), resumed.get("result")),
        "status": resumed["status"],
    }
    print(json.dumps(result), flush=True)
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    results[f"{'diarized' if args.diarize else 'plain'}/{args.minutes:g}"] = result
    write(out, results, "python -m bench.resume " + " ".join(sys.argv[1:]))


def _differing_chunks(first: dict | None, second: dict | None) -> dict:
    """The chunks in one result and not the other, how many of them were sampled (temperature > 0), and
    where they start (which blocks they are in)."""
    def chunks(result):
        return {json.dumps(chunk, sort_keys=True): chunk for chunk in (result or {}).get("chunks", ())}

    one, other = chunks(first), chunks(second)
    differing = [chunk for key, chunk in {**one, **other}.items() if (key in one) != (key in other)]
    return {"count": len(differing), "sampled": sum((chunk.get("temperature") or 0) > 0 for chunk in differing),
            "starts_s": sorted({chunk["timestamp"][0] for chunk in differing})[:30]}


def _differences(first, second, where: str = "result", found: list | None = None) -> list[str]:
    """Where two results differ (at most 10 places), each with both values shortened."""
    found = [] if found is None else found
    if len(found) >= 10 or first == second:
        return found
    if isinstance(first, dict) and isinstance(second, dict):
        for key in sorted(set(first) | set(second)):
            _differences(first.get(key), second.get(key), f"{where}.{key}", found)
    elif isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        for index, (a, b) in enumerate(zip(first, second)):
            _differences(a, b, f"{where}[{index}]", found)
    else:
        found.append(f"{where}: {str(first)[:120]!r} / {str(second)[:120]!r}")
    return found


if __name__ == "__main__":
    main()
