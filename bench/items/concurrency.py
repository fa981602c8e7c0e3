"""Item 9 (issue 16): 8 concurrent 10 s requests against the server at MAX_CONCURRENCY 1 vs 2.

Every variant is its own server process (``server.py serve``), all started first and idle while
another is measured; rounds go round-robin over the variants with the order rotated each round, as in
the other items. Per round a variant gets ``concurrency_requests`` requests at once (the 10.2 s clip as
the body of ``/predict``); reported: requests per wall-minute and per server CPU-minute (the server's
own /proc CPU time: the work done, nearly independent of other jobs on the cores), the median over the
rounds, and the server's memory after loading, after its first requests and at its peak.

Variants: one decode at a time with 1 or 2 CTranslate2 threads, and two at a time (two CTranslate2
workers, NUM_WORKERS following MAX_CONCURRENCY) with 1 or 2 threads each. A last server with four
workers only answers four requests at once, for memory per extra worker.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from bench import inputs
from bench.items.serving import launch_server, wait_ready
from support.measure import cpu_seconds, rss_mib

# name: (MAX_CONCURRENCY, CPU_THREADS per CTranslate2 worker); the plan names the variants it runs.
SETTINGS = {"mc1_threads1": (1, 1), "mc1_threads2": (1, 2), "mc2_threads1": (2, 1), "mc2_threads2": (2, 2),
            "mc4_threads1": (4, 1)}
MEMORY_ONLY = {"mc4_threads1"}  # loaded and used once, for memory per worker; not timed


def _post_at_once(url: str, body: bytes, count: int) -> list[int]:
    def post(_):
        response = requests.post(f"{url}/predict", data=body, headers={"Content-Type": "audio/flac"}, timeout=900)
        return response.status_code

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(post, range(count)))


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _round(server, body: bytes, count: int) -> dict:
    process, url = server
    cpu, wall = cpu_seconds(process.pid), time.perf_counter()
    statuses = _post_at_once(url, body, count)
    wall, cpu = time.perf_counter() - wall, cpu_seconds(process.pid) - cpu
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "failed": sum(s != 200 for s in statuses),
            "per_wall_minute": round(60 * count / wall, 2), "per_cpu_minute": round(60 * count / cpu, 2)}


def _started(model: str, variants: dict, workdir: Path, body: bytes) -> tuple[dict, dict]:
    """Each variant's server (all loading at once), then, one server at a time, warmed up with
    MAX_CONCURRENCY requests at once (every worker has decoded once); its memory before and after."""
    servers = {name: launch_server(model, workdir / f"{name}.log", max_concurrency=concurrency, cpu_threads=threads)
               for name, (concurrency, threads) in variants.items()}
    memory = {}
    try:
        for name, (process, url) in servers.items():
            wait_ready(process, url, workdir / f"{name}.log")
            loaded = rss_mib(process.pid)
            failed = sum(s != 200 for s in _post_at_once(url, body, variants[name][0]))
            memory[name] = {"rss_after_load_mib": loaded, "rss_after_first_use_mib": rss_mib(process.pid),
                            "warmup_failed": failed}
    except Exception:
        _stop(servers)
        raise
    return servers, memory


def _stop(servers: dict) -> None:
    for process, _ in servers.values():
        process.terminate()
    for process, _ in servers.values():
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def run(plan, workdir: Path) -> dict:
    clip_file = inputs.clip_path(plan.latency_clip)
    body, count = clip_file.read_bytes(), plan.concurrency_requests
    servers, memory = _started(plan.model, {name: SETTINGS[name] for name in plan.concurrency_variants}, workdir, body)
    timed = [name for name in plan.concurrency_variants if name not in MEMORY_ONLY]
    try:
        _stop({name: servers.pop(name) for name in plan.concurrency_variants if name in MEMORY_ONLY})
        rounds: dict[str, list[dict]] = {name: [] for name in timed}
        for index in range(plan.concurrency_repeats):
            shift = index % len(timed)
            for name in timed[shift:] + timed[:shift]:
                rounds[name].append(_round(servers[name], body, count))
        for name, (process, _) in servers.items():
            memory[name].update(rss_at_end_mib=rss_mib(process.pid), peak_rss_mib=_peak_rss_mib(process.pid))
    finally:
        _stop(servers)
    return {
        "model": plan.model,
        "clip": clip_file.name,
        "clip_s": inputs.seconds_of(inputs.clip(plan.latency_clip)),
        "requests_at_once": count,
        "repeats": plan.concurrency_repeats,
        "variants": {name: _summary(SETTINGS[name], rounds[name], memory[name], count) for name in timed},
        "memory_only": {name: {"max_concurrency": SETTINGS[name][0], "cpu_threads": SETTINGS[name][1], **memory[name]}
                        for name in plan.concurrency_variants if name in MEMORY_ONLY},
        "rss_per_extra_worker_mib": _per_worker(memory),
        "failed_requests": sum(r["failed"] for runs in rounds.values() for r in runs)
        + sum(m["warmup_failed"] for m in memory.values()),
    }


def _summary(setting: tuple[int, int], runs: list[dict], memory: dict, count: int) -> dict:
    return {"max_concurrency": setting[0], "cpu_threads": setting[1],
            "per_wall_minute": statistics.median(r["per_wall_minute"] for r in runs),
            "per_cpu_minute": statistics.median(r["per_cpu_minute"] for r in runs),
            "cpu_s_per_request": round(statistics.median(r["cpu_s"] for r in runs) / count, 2),
            "rounds": runs, **memory}


def _per_worker(memory: dict) -> dict:
    """RSS growth per extra worker against one worker, one thread each: {"1->2": {...}, "1->4": {...}}."""
    base = memory["mc1_threads1"]
    growth = {}
    for name, values in memory.items():
        workers, threads = SETTINGS[name]
        if threads == 1 and workers > 1:
            growth[f"1->{workers}"] = {key: round((values[key] - base[key]) / (workers - 1), 1)
                                       for key in ("rss_after_load_mib", "rss_after_first_use_mib")}
    return growth
