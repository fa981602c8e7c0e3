"""Run a batch: pick what is left to do, decode it (here, or fanned out over Ray), summarise."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from whisper_endpoint.batch.inputs import InputError, Item
from whisper_endpoint.batch.outputs import FORMATS
from whisper_endpoint.batch.summary import Progress, Summary
from whisper_endpoint.batch.work import Handler, Outcome, pending, transcribe_file
from whisper_endpoint.formats import FORMATS as FORMAT_SPECS
from whisper_endpoint.formats import parameters_for, speakers_available


def plan(items: list[Item], out_dir: Path, retry_failed: bool) -> tuple[list[Item], int]:
    """(files still to do, files skipped because done or already failed)."""
    todo = [item for item in items if pending(item, out_dir, retry_failed)]
    return todo, len(items) - len(todo)


def check_formats(formats: list[str], parameters: dict, diarization: bool) -> tuple[list[str], dict]:
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise InputError(f"unknown output format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    chosen = sorted(set(formats) - {"json"})
    for name in chosen:
        if FORMAT_SPECS[name].speakers == "required" and not speakers_available(parameters, diarization):
            raise InputError(f"{name} output needs speaker diarization: set DIARIZATION_MODEL (e.g. embedded), "
                             "or --param multichannel=true for recordings with one speaker per channel")
        parameters = {**parameters, **parameters_for(name, parameters)}
    return ["json", *chosen], parameters


def run_batch(
    items: list[Item],
    out_dir: Path,
    handler: Handler | None = None,
    *,
    formats: list[str] = ("json",),
    parameters: dict | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    fan_out: Callable[[list[Item], Path, list[str], dict], Iterable[Outcome]] | None = None,
) -> Summary:
    """Decode every pending item with ``handler`` in this process, or with ``fan_out`` (Ray)."""
    out_dir = Path(out_dir)
    todo, skipped = plan(items, out_dir, retry_failed)
    summary = Summary(total=len(items), skipped=skipped)
    bar = Progress(summary, len(todo), enabled=progress)
    try:
        if fan_out is not None:
            outcomes = fan_out(todo, out_dir, list(formats), dict(parameters or {}))
        else:
            outcomes = (transcribe_file(handler, item, out_dir, list(formats), parameters or {}) for item in todo)
        for outcome in outcomes:
            bar.update(outcome)
    finally:
        bar.close()
    return summary
