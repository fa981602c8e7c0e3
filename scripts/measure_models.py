"""What a model costs a server with several (ASR_MODELS): the first request's latency (the cold load)
against a warm one, and the resident memory each loaded model holds and gives back when unloaded.

    .venv/bin/python -m scripts.measure_models [--models tiny=embedded:tiny.en,base=embedded:base,...]
                                               [--out results/models.json]

A live server on loopback (this process, so /proc/self is its memory), one thread, the 1.8 s clip; for
each model after the first (which loads at start-up): RSS before its first request, after it, and after
it is unloaded (``MODEL_IDLE_UNLOAD_S``: the idle sweep, then malloc_trim); the first and a warm
request's wall time; then the second model loaded and unloaded four more times (RSS after each unload).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("CPU_THREADS", "1")

import requests  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLIP = ROOT / "audio" / "clips" / "asterisk_all-circuits-busy-now.flac"
MODELS = "tiny=embedded:tiny.en,base=embedded:base,tinytf=embedded:tiny.en?backend=transformers," \
         "basetf=embedded:base?backend=transformers"


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        return round(int(next(line for line in status if line.startswith("VmRSS")).split()[1]) / 1024, 1)


def timed_post(url: str, model: str) -> float:
    started = time.perf_counter()
    reply = requests.post(f"{url}/?model={model}", data=CLIP.read_bytes(), headers={"Content-Type": "audio/flac"},
                          timeout=600)
    reply.raise_for_status()
    return round(time.perf_counter() - started, 3)


def loaded(url: str, name: str) -> bool:
    return {card["id"]: card["loaded"] for card in requests.get(f"{url}/v1/models", timeout=10).json()["data"]}[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "models.json")
    args = parser.parse_args()
    from tests.serving_helpers import live_server, wait_until
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings

    settings = ServerSettings(asr_models=args.models, model_idle_unload_s=2.0)
    names = [entry.split("=")[0] for entry in args.models.split(",")]
    rows = []
    with live_server(create_app(settings)) as live:
        wait_until(lambda: requests.get(f"{live.url}/health", timeout=5).status_code == 200, timeout=300)
        timed_post(live.url, names[0])  # the default's first decode, so that it is not counted below
        for name in names[1:]:
            before = rss_mib()
            first = timed_post(live.url, name)
            warm = timed_post(live.url, name)
            with_model = rss_mib()
            wait_until(lambda: not loaded(live.url, name), timeout=60)
            after = rss_mib()
            row = {"model": name, "first_request_s": first, "warm_request_s": warm, "rss_before_mib": before,
                   "rss_loaded_mib": with_model, "rss_after_unload_mib": after,
                   "held_mib": round(with_model - before, 1), "given_back_mib": round(with_model - after, 1)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        # The same model loaded and unloaded again and again: RSS after each unload (does a swap leak?).
        swaps = []
        for _ in range(4):
            timed_post(live.url, names[1])
            wait_until(lambda: not loaded(live.url, names[1]), timeout=60)
            swaps.append(rss_mib())
        print(json.dumps({"rss_after_each_unload_of": names[1], "mib": swaps}), flush=True)
    args.out.write_text(json.dumps({"command": "python -m scripts.measure_models", "models": args.models,
                                    "threads": 1, "clip": str(CLIP.relative_to(ROOT)),
                                    "load_average": os.getloadavg()[0], "rows": rows,
                                    "rss_after_each_unload": {"model": names[1], "mib": swaps}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
