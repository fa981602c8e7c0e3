"""Joining or starting a Ray cluster, the same way for the batch fan-out and for Ray Serve.

- Ray's usage statistics stay off unless the deployer set ``RAY_USAGE_STATS_ENABLED`` themselves.
- A local cluster listens on loopback only, without the dashboard.
- Workers get the model settings of this process (ASR_MODEL, DEVICE, ...; never secrets such as
  HF_TOKEN: set those on the cluster's nodes) and this repository on PYTHONPATH, so they load
  the same ``EndpointHandler``. On a multi-node cluster every node needs the same install (image).
"""

from __future__ import annotations

import os
from pathlib import Path

REPOSITORY = str(Path(__file__).resolve().parents[2])

# Non-secret settings a worker needs to load the same models as this process.
FORWARDED = (
    "ASR_MODEL", "ASR_BACKEND", "ASSISTANT_MODEL", "DIARIZATION_MODEL", "DEVICE", "COMPUTE_TYPE", "CPU_THREADS",
    "MODEL_CACHE_DIR", "MAX_AUDIO_SECONDS", "MAX_BATCH_SIZE", "HF_HUB_OFFLINE", "HF_HOME", "XDG_CACHE_HOME",
    "PYANNOTE_METRICS_ENABLED",
)


def usage_stats_off() -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def connect(address: str = "local", num_cpus: float | None = None, num_gpus: float | None = None):
    """``local``: a single-node cluster on loopback; ``auto`` or ``ray://host:10001``: an existing one."""
    usage_stats_off()
    try:
        import ray
    except ImportError as exc:  # optional: endpoints do not install it at every cold start
        raise SystemExit("Ray is not installed: pip install -r requirements-scale.txt") from exc
    if ray.is_initialized():
        return ray
    if address == "local":
        # Serve kills its HTTP proxy when it is not ready within 5 s; on a small, busy machine its
        # start-up alone took 18 s. Workers of a local cluster inherit this environment.
        os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
        ray.init(num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, configure_logging=True, logging_level="WARNING")
    else:
        ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    return ray


def worker_runtime_env(cpus: float) -> dict:
    """Environment of a worker: this process's model settings, this repository importable, and as
    many decoding threads as the worker has CPUs (Ray itself sets OMP_NUM_THREADS the same way)."""
    env = {name: os.environ[name] for name in FORWARDED if name in os.environ}
    env.setdefault("CPU_THREADS", str(max(1, int(cpus))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPOSITORY, os.environ.get("PYTHONPATH")]))
    return {"env_vars": env}
