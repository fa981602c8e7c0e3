"""What a model costs a server with several (ASR_MODELS): the first request's latency (the cold load)
against a warm one, and the resident memory each loaded model holds and gives back when unloaded.

A fresh process (so that its memory is the server's alone) runs a live server on loopback in a thread,
one thread, the 1.8 s clip; for each model after the first (which loads at start-up): RSS before its
first request, after it, and after it is unloaded (``MODEL_IDLE_UNLOAD_S``: the idle sweep, then
malloc_trim); the first and a warm request's wall time; then the second model loaded and unloaded
``swaps`` more times (RSS after each unload: does a swap leak?). Jobs stay on, as by default, with
their store in a temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from support.paths import CLIPS, ROOT
from support.serving import CLIP


def _post(url: str, model: str) -> float:
    import requests

    started = time.perf_counter()
    reply = requests.post(f"{url}/?model={model}", data=(CLIPS / CLIP).read_bytes(),
                          headers={"Content-Type": "audio/flac"}, timeout=600)
    reply.raise_for_status()
    return round(time.perf_counter() - started, 3)


def _loaded(url: str, name: str) -> bool:
    import requests

    return {card["id"]: card["loaded"] for card in requests.get(f"{url}/v1/models", timeout=10).json()["data"]}[name]


def one(sizes, folder: Path) -> dict:
    """In the child: the server, each model's first and warm request and memory, then the swaps."""
    import requests

    from support.measure import rss_mib
    from support.serving import live_server, wait_until
    from whisper_endpoint.jobs.settings import JobSettings
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings

    settings = ServerSettings(asr_models=sizes.models, model_idle_unload_s=sizes.idle_unload_s)
    names = [entry.split("=")[0] for entry in sizes.models.split(",")]
    rows = []
    with live_server(create_app(settings, job_settings=JobSettings(db=folder / "jobs.sqlite"))) as live:
        wait_until(lambda: requests.get(f"{live.url}/health", timeout=5).status_code == 200, timeout=300)
        _post(live.url, names[0])  # the default's first decode, so that it is not counted below
        for name in names[1:]:
            before = rss_mib()
            first, warm = _post(live.url, name), _post(live.url, name)
            with_model = rss_mib()
            wait_until(lambda: not _loaded(live.url, name), timeout=60)
            after = rss_mib()
            rows.append({"model": name, "first_request_s": first, "warm_request_s": warm, "rss_before_mib": before,
                         "rss_loaded_mib": with_model, "rss_after_unload_mib": after,
                         "held_mib": round(with_model - before, 1), "given_back_mib": round(with_model - after, 1)})
        swaps = []
        for _ in range(sizes.swaps):
            _post(live.url, names[1])
            wait_until(lambda: not _loaded(live.url, names[1]), timeout=60)
            swaps.append(rss_mib())
    return {"models": sizes.models, "threads": 1, "clip": CLIP, "idle_unload_s": sizes.idle_unload_s,
            "rows": rows, "rss_after_each_unload": {"model": names[1], "mib": swaps}}


def run(plan) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CPU_THREADS": "1"}
    with tempfile.TemporaryDirectory(prefix="bench-models-") as folder:
        done = subprocess.run([sys.executable, "-m", "bench.items.models", "quick" if plan.quick else "full", folder],
                              cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"models child failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    from bench.plan import by_name

    print(json.dumps(one(by_name(sys.argv[1]).models, Path(sys.argv[2]))))
