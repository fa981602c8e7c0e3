"""Transcribe many files into an output folder that mirrors their relative paths.

    whisper-endpoint batch INPUT [INPUT...] --out DIR [--manifest FILE] [--format srt,vtt]
        [--param key=value ...] [--retry-failed] [--ray [ADDRESS]] [--workers N]

INPUT: a folder (searched recursively for audio/video files), a glob pattern (quote it) or a file.
Each input ``a/b.flac`` gives ``DIR/a/b.flac.json`` (written last and atomically: it exists only when
the file is done), plus ``.srt``/``.vtt``/``.rttm`` on request; a failure gives
``DIR/a/b.flac.error.json`` and the batch goes on. A rerun skips done and failed files
(``--retry-failed`` retries the failed ones). Models come from the environment as on an endpoint
(ASR_MODEL, DIARIZATION_MODEL, DEVICE, ...). Exit status: 0 all done, 1 some failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from whisper_endpoint.batch.inputs import InputError, collect
from whisper_endpoint.batch.outputs import FORMATS
from whisper_endpoint.batch.runner import check_formats, run_batch
from whisper_endpoint.cli.options import parameter
from whisper_endpoint.core.errors import EndpointError


def parse_args(argv: list[str] | None, prog: str = "python -m whisper_endpoint.batch") -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2],
    )
    parser.add_argument("inputs", nargs="*", help="folders, glob patterns or files")
    parser.add_argument("--manifest", action="append", default=[], help="a file listing one input path per line")
    parser.add_argument("--out", required=True, type=Path, help="the output folder")
    parser.add_argument("--format", default="json", help=f"comma-separated: json (the response, always), {', '.join(FORMATS[1:])}")
    parser.add_argument("--param", action="append", type=parameter, default=[], help="request parameter key=value")
    parser.add_argument("--retry-failed", action="store_true", help="retry files whose failure was recorded")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--summary-json", type=Path, help="also write the summary as JSON here")
    ray = parser.add_argument_group("Ray (fan the files out over a Ray cluster with Ray Data)")
    ray.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                     help="'local' (default) starts a single-node cluster; 'auto' or ray://host:10001 joins one")
    ray.add_argument("--workers", type=int, default=None, help="model replicas (actors); default: fit the cluster")
    ray.add_argument("--cpus-per-worker", type=float, default=1.0, help="CPUs per replica (fractions allowed)")
    ray.add_argument("--gpus-per-worker", type=float, default=0.0, help="GPUs per replica (fractions allowed)")
    ray.add_argument("--num-cpus", type=float, default=None, help="CPUs of a local cluster (default: all)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, prog: str = "python -m whisper_endpoint.batch") -> int:
    args = parse_args(argv, prog)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from whisper_endpoint.core.config import ModelSettings

    model_settings = ModelSettings()
    try:
        items = collect(args.inputs, args.manifest)
        formats, parameters = check_formats(
            [f.strip() for f in args.format.split(",") if f.strip()], dict(args.param),
            diarization=bool(model_settings.diarization_model),
        )
        if "model" in parameters:  # an ASR_MODELS name, as a server's request would choose it
            model_settings = _chosen_model(parameters.pop("model"), model_settings, ray=bool(args.ray))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    handler, fan_out = None, None
    try:
        if args.ray:
            from whisper_endpoint.batch.ray_fan_out import RayFanOut

            fan_out = RayFanOut(args.ray, workers=args.workers, cpus_per_worker=args.cpus_per_worker,
                                gpus_per_worker=args.gpus_per_worker, num_cpus=args.num_cpus)
        else:
            from whisper_endpoint.handler import EndpointHandler

            handler = EndpointHandler(settings=model_settings, open_library=_speaker_library)
    except EndpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary = run_batch(items, args.out, handler, formats=formats, parameters=parameters,
                        retry_failed=args.retry_failed, progress=not args.no_progress, fan_out=fan_out)
    print(summary.text())
    if args.summary_json:
        args.summary_json.write_text(json.dumps(summary.as_dict(), indent=1) + "\n")
    return 1 if summary.failed else 0


def _speaker_library(diarizer, voices):
    """The server's speaker library (SPEAKERS_DB, or beside JOBS_DB): the same voices named as by the server."""
    from whisper_endpoint.jobs.settings import JobSettings
    from whisper_endpoint.speakers.library.opening import open_library
    from whisper_endpoint.speakers.library.settings import LibrarySettings

    return open_library(LibrarySettings(), JobSettings().db, diarizer, voices)


def _chosen_model(name: str, settings, *, ray: bool):
    """The settings of the ASR_MODELS entry ``name`` (OpenAI's names and the first entry: the default)."""
    from whisper_endpoint.serving.model_pool import resolve
    from whisper_endpoint.serving.service import model_entries
    from whisper_endpoint.serving.settings import ServerSettings

    entries = {entry.name: entry for entry in model_entries(ServerSettings())}
    try:
        entry = entries[resolve(list(entries), name)]
    except EndpointError as exc:
        raise InputError(f"--param model: {exc.message}") from None
    if ray and entry is not next(iter(entries.values())):
        raise InputError("--param model with --ray: set ASR_MODEL (and ASR_BACKEND) for the cluster's workers instead")
    return settings.model_copy(update=entry.settings_update())


if __name__ == "__main__":
    sys.exit(main())
