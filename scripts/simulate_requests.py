"""The client half of scripts/simulate_endpoint.sh: wait for the toolkit's server, post every audio file, record.

    python scripts/simulate_requests.py wait URL PID TIMEOUT_S
    python scripts/simulate_requests.py post URL AUDIO_DIR OUT.json
    python scripts/simulate_requests.py coldstart PIP_LOG FREEZE_BEFORE FREEZE_AFTER SECONDS PIP_CHECK OUT.json
    python scripts/simulate_requests.py merge RESULTS.json IMAGE PART.json...
    python scripts/simulate_requests.py summary RESULTS.json      (the tables in docs/serving.md)

Standard library only: it runs with any Python. Each file goes three ways: the raw bytes with the
file's audio content type (what InferenceClient sends), JSON with base64 ``inputs`` and
``parameters`` (which the toolkit decodes to bytes itself when HF_TASK is automatic-speech-recognition),
and JSON with base64 ``inputs`` alone (the string reaches the handler).
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CONTENT_TYPES = {".flac": "audio/flac", ".wav": "audio/wav", ".ogg": "audio/ogg", ".webm": "audio/webm",
                 ".mp3": "audio/mpeg", ".m4a": "audio/m4a"}
PARAMETERS = {"return_timestamps": "word"}
JSON = "application/json"


def wait(url: str, pid: int, timeout_s: float) -> int:
    """0 once /health answers; 1 if the server process ended first (a start-up error) or time ran out."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                if response.status == 200:
                    print(f"{time.monotonic() - started:.1f}")
                    return 0
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if not os.path.exists(f"/proc/{pid}"):
            print("exited")
            return 1
        time.sleep(1)
    print("timeout")
    return 1


def _post(url: str, body: bytes, content_type: str) -> dict:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, payload = exc.code, exc.read()
    seconds = round(time.monotonic() - started, 2)
    try:
        answer = json.loads(payload)
    except ValueError:
        return {"status": status, "seconds": seconds, "error": payload[:300].decode(errors="replace")}
    if status != 200 or not isinstance(answer, dict) or "text" not in answer:
        return {"status": status, "seconds": seconds, "error": str(answer)[:300]}
    speakers = sorted({entry["speaker"] for entry in answer.get("speakers", [])})
    return {"status": status, "seconds": seconds, "text": answer["text"], "speakers": speakers,
            "backend": answer.get("decoding", {}).get("backend"), "warnings": answer.get("warnings", [])}


def post_all(url: str, audio_dir: Path) -> list[dict]:
    results = []
    for path in sorted(audio_dir.iterdir()):
        data = path.read_bytes()
        encoded = base64.b64encode(data).decode()
        ways = {
            "raw": (data, CONTENT_TYPES[path.suffix]),
            "base64+parameters": (json.dumps({"inputs": encoded, "parameters": PARAMETERS}).encode(), JSON),
            "base64": (json.dumps({"inputs": encoded}).encode(), JSON),
        }
        for way, (body, content_type) in ways.items():
            result = {"file": path.name, "way": way, **_post(url, body, content_type)}
            print(json.dumps(result, ensure_ascii=False), flush=True)
            results.append(result)
    return results


_DOWNLOAD = re.compile(r"Downloading (\S+) \(([\d.]+) (kB|MB|GB)\)")
_UNITS = {"kB": 1e-3, "MB": 1.0, "GB": 1e3}


def _freeze(path: Path) -> dict[str, str]:
    pins = (line.split("==", 1) for line in path.read_text().splitlines() if "==" in line)
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pins}  # pip 24 and 25 spell them apart


def coldstart(log: Path, before: Path, after: Path, seconds: float, check: Path) -> dict:
    """What the cold start's pip did: seconds, megabytes downloaded, every package it changed."""
    downloads = [(name, float(size) * _UNITS[unit]) for name, size, unit in _DOWNLOAD.findall(log.read_text())]
    old, new = _freeze(before), _freeze(after)
    return {"cold_start": {
        "seconds": round(seconds, 1),
        "downloaded_mb": round(sum(size for _, size in downloads), 1),
        "largest_downloads_mb": {name: round(size, 1) for name, size in sorted(downloads, key=lambda d: -d[1])[:8]},
        "upgraded_or_changed": {name: f"{old[name]} -> {new[name]}" for name in sorted(old)
                                if name in new and old[name] != new[name]},
        "added": {name: new[name] for name in sorted(new) if name not in old},
        "removed": sorted(name for name in old if name not in new),
        "pip_check": check.read_text().strip().splitlines(),
    }}


def merge(results_path: Path, image: str, parts: list[Path]) -> None:
    """Put one image's parts (cold start, each configuration) into the results file, replacing that image."""
    results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    entry = {}
    for part in parts:
        entry.update(json.loads(part.read_text()))
    results[image] = entry
    results_path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


CONFIGURATIONS = ("ctranslate2", "ctranslate2-task", "transformers", "transformers-task")


def summary(results: dict) -> str:
    """One markdown row per image (cold start) and per configuration (start-up, requests)."""
    rows = ["| image | stack | cold start | pip changed | pip check after |", "|---|---|---|---|---|"]
    for image, entry in results.items():
        if "cold_start" not in entry:
            continue
        cold, stack = entry["cold_start"], entry["image"]["packages"]
        changed = {k: v for k, v in cold["upgraded_or_changed"].items() if not k.startswith("nvidia")}
        nvidia = sum(1 for k in cold["upgraded_or_changed"] if k.startswith("nvidia"))
        rows.append(
            f"| {image} | {', '.join(f'{k} {v}' for k, v in sorted(stack.items()))} | {cold['seconds']:.0f} s, "
            f"{cold['downloaded_mb'] / 1000:.2f} GB | {', '.join(f'{k} {v}' for k, v in changed.items())}; "
            f"{nvidia} nvidia-*-cu12 libraries; {len(cold['added'])} added, {len(cold['removed'])} removed "
            f"({', '.join(cold['removed']) or 'none'}) | {'; '.join(cold['pip_check']) or 'consistent'} |"
        )
    rows += ["", "| image | configuration | start-up | requests answered 200 | texts | speakers |",
             "|---|---|---|---|---|---|"]
    for image, entry in results.items():
        for name in CONFIGURATIONS + ("bad-diarization",):
            if name not in entry:
                continue
            run = entry[name]
            if not run["started"]:
                error = (run.get("startup_error") or ["(no error line)"])[-1].strip()[:200]
                rows.append(f"| {image} | {name} ({run['env']}) | failed: `{error}` | | | |")
                continue
            ok = [r for r in run["requests"] if r["status"] == 200]
            texts = sorted({(r["file"].split(".")[0], r["text"][:45]) for r in ok})
            speakers = sorted({(r["file"].split(".")[0], len(r["speakers"])) for r in ok})
            rows.append(
                f"| {image} | {name} ({run['env']}) | {run['startup_s']:.0f} s | {len(ok)}/{len(run['requests'])} | "
                + "; ".join(f"{f}: {t!r}" for f, t in texts) + " | "
                + ", ".join(f"{f}: {n}" for f, n in speakers) + " |"
            )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    command = argv[0]
    if command == "wait":
        return wait(argv[1], int(argv[2]), float(argv[3]))
    if command == "post":
        results = post_all(argv[1], Path(argv[2]))
        Path(argv[3]).write_text(json.dumps(results, ensure_ascii=False))
        return 0
    if command == "coldstart":
        cold = coldstart(Path(argv[1]), Path(argv[2]), Path(argv[3]), float(argv[4]), Path(argv[5]))
        Path(argv[6]).write_text(json.dumps(cold, ensure_ascii=False))
        return 0
    if command == "summary":
        print(summary(json.loads(Path(argv[1]).read_text())))
        return 0
    if command == "merge":
        merge(Path(argv[1]), argv[2], [Path(p) for p in argv[3:]])
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
