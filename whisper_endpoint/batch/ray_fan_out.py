"""The batch command's ``--ray`` mode: files fanned out over a Ray cluster with Ray Data.

Each worker is an actor that loads the ``EndpointHandler`` once and runs the same per-file function
as the single-process mode (``work.transcribe_file``), so both modes write the same files. On a
multi-node cluster the input and output folders must be on storage every node sees (NFS, a shared
volume) under the same path.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from whisper_endpoint.batch.inputs import Item
from whisper_endpoint.batch.work import Outcome, transcribe_file
from whisper_endpoint.scale.cluster import connect, worker_runtime_env


class _Transcriber:
    """One Ray Data actor: one loaded model, one file per call."""

    def __init__(self, out_dir: str, formats: list[str], parameters: dict):
        from whisper_endpoint.handler import EndpointHandler

        self.handler = EndpointHandler()
        self.out_dir, self.formats, self.parameters = Path(out_dir), formats, parameters

    def __call__(self, batch: dict) -> dict:
        rows = [
            transcribe_file(self.handler, Item(path, relative), self.out_dir, self.formats, self.parameters).as_row()
            for path, relative in zip(batch["path"], batch["relative"], strict=True)
        ]
        return {name: [row[name] for row in rows] for name in rows[0]} if rows else {}


class RayFanOut:
    def __init__(self, address: str = "local", *, workers: int | None = None, cpus_per_worker: float = 1.0,
                 gpus_per_worker: float = 0.0, num_cpus: float | None = None):
        self.ray = connect(address, num_cpus=num_cpus)
        self.cpus, self.gpus = cpus_per_worker, gpus_per_worker
        self.workers = workers or self._fit()

    def _fit(self) -> int:
        """As many workers as the cluster's CPUs (and GPUs, when workers use them) allow."""
        resources = self.ray.cluster_resources()
        fits = [math.floor(resources.get("CPU", 1) / self.cpus)] if self.cpus else []
        if self.gpus:
            fits.append(math.floor(resources.get("GPU", 0) / self.gpus))
        return max(1, min(fits) if fits else 1)

    def __call__(self, todo: list[Item], out_dir: Path, formats: list[str], parameters: dict) -> Iterator[Outcome]:
        if not todo:
            return
        import ray.data

        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # the batch command draws its own
        # Small blocks spread the files evenly over the workers; capped so a huge batch stays cheap to plan.
        blocks = min(len(todo), 2000)
        dataset = ray.data.from_items([item.as_row() for item in todo], override_num_blocks=blocks)
        results = dataset.map_batches(
            _Transcriber,
            fn_constructor_kwargs={
                "out_dir": str(Path(out_dir).resolve()), "formats": formats, "parameters": parameters,
            },
            batch_size=1,  # one file per call: a long file never holds others back
            compute=ray.data.ActorPoolStrategy(size=min(self.workers, len(todo))),
            num_cpus=self.cpus,
            num_gpus=self.gpus,
            runtime_env=worker_runtime_env(self.cpus),
        )
        for row in results.iter_rows():
            yield Outcome(**row)
