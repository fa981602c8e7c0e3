"""Serve the handler on Ray: ``whisper-endpoint scale [--address ADDRESS] [--num-cpus N]``.

Settings from SCALE_* variables (``ScaleSettings``: replicas, autoscaling bounds, CPU/GPU per
replica, host, port) and the model settings (ASR_MODEL, ...). ``--address local`` (default) starts a
single-node cluster on this machine; ``auto`` joins the cluster started with ``ray start``.
"""

from __future__ import annotations

import argparse
import signal
import threading


def main(argv: list[str] | None = None, prog: str = "python -m whisper_endpoint.scale") -> None:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("--address", default="local", help="'local', 'auto' or ray://host:10001")
    parser.add_argument("--num-cpus", type=float, default=None, help="CPUs of a local cluster (default: all)")
    args = parser.parse_args(argv)

    from whisper_endpoint.scale.cluster import connect
    from whisper_endpoint.scale.serve_app import ScaleSettings, build

    settings = ScaleSettings()
    ray = connect(args.address, num_cpus=args.num_cpus)
    from ray import serve

    serve.start(http_options={"host": settings.host, "port": settings.port})
    serve.run(build(settings), name=settings.name, route_prefix=settings.route_prefix)
    print(f"serving on http://{settings.host}:{settings.port}{settings.route_prefix}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    serve.shutdown()
    ray.shutdown()


if __name__ == "__main__":
    main()
