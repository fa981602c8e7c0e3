"""``python -m bench [--quick] [--items ...] [--out-dir DIR]``: run the benchmarks, write the results
JSON after every item (with its ``produced_by``: the command, the commit, the machine), then the plot and
the markdown table.

Without --out-dir a full run writes results/benchmarks.json, docs/img/benchmarks.png and the table in
docs/benchmarks.md; --quick (tiny.en, seconds of audio) writes into a temporary directory instead.
With --items, the other items' results already in the JSON are kept (re-run one item alone).
--merge FILE... runs nothing: it takes the items that ran well in other results files (runs split
across processes or machines; the most recent run of an item wins), then redraws the plot and the table.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from support.measure import loadavg  # noqa: E402
from support.results import produced_by, write  # noqa: E402
from bench.plan import FULL, QUICK  # noqa: E402

# Run order: the must-haves (overhead, load test) first, the longest items last. Values: the
# issue and its item the entry answers (results' ``issue_item``).
ITEMS = {
    "overhead": "1",
    "serving": "7",
    "precision": "2",
    "speculative": "3",
    "batching": "4",
    "scaling": "6",
    "diarization": "5",
    "concurrency": "16",  # issue 16's item (item 9 in docs/benchmarks.md)
    "job_queue": "43",  # a minute: the store alone, then one and two servers on one PostgreSQL queue
    "models": "44",  # a minute or two: several models in one server
}
# Extra items, run only when named: parts of item 1 alone (the transformers backend changes most often);
# item 5's diarizer share and alongside-vs-after (~8 and ~4 min, mostly what item 5 already measures);
# the batch command single-process vs Ray (~4 min, Ray's start-up in it); a request's encoder windows
# and batch memory (~4 min, the figures behind the window bound, which changes rarely).
EXTRA_ITEMS = {"overhead_transformers": "1", "overhead_ctranslate2": "1", "overhead_short": "1", "diarization_merge": "5",
               "diarization_share": "5", "diarization_alongside": "5", "batch": None, "request_cost": "17"}  # batch: no issue item
NEEDS_WORKDIR = {"serving", "concurrency", "job_queue"}  # run(plan, workdir): server logs


def run_item(name: str, plan, workdir: Path) -> dict:
    import importlib

    # An item is bench/items/NAME.py's run(), or a part of one: NAME = MODULE_PART, MODULE's run_PART().
    module_name, _, part = ("", "", "") if (ROOT / "bench" / "items" / f"{name}.py").exists() else name.partition("_")
    run = getattr(importlib.import_module(f"bench.items.{module_name or name}"), f"run_{part}" if part else "run")
    before, started = loadavg(), time.perf_counter()
    try:
        result = run(plan, workdir) if name in NEEDS_WORKDIR else run(plan)
        status = "ok"
    except Exception:  # one broken item must not lose the others' results
        result, status = {"error": traceback.format_exc(limit=5)}, "failed"
    return {"issue_item": {**ITEMS, **EXTRA_ITEMS}[name], "status": status, "wall_s": round(time.perf_counter() - started, 1),
            "loadavg_before": before, "loadavg_after": loadavg(), "finished_at": round(time.time()), **result}


def source_state() -> dict:
    """Which code was measured: the commit, and files changed since (others edit the same tree)."""
    made = produced_by("")
    return {"commit": made["commit"], "uncommitted_changes": made["uncommitted_changes"]}


def environment(plan) -> dict:
    import ctranslate2
    import faster_whisper
    import torch
    import transformers

    return {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "faster_whisper": faster_whisper.__version__, "ctranslate2": ctranslate2.__version__,
            "threads_per_backend": 1, "model": plan.model, "quick": plan.quick}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny.en on seconds of audio: the smoke test")
    parser.add_argument("--items", nargs="+", choices=[*ITEMS, *EXTRA_ITEMS], default=list(ITEMS))
    parser.add_argument("--out-dir", type=Path, help="where results, plot and table go (see above)")
    parser.add_argument("--merge", type=Path, nargs="+", help="results files to take finished items from")
    args = parser.parse_args(argv)
    command = " ".join(["python -m bench", *(sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(level=logging.WARNING)
    plan = QUICK if args.quick else FULL
    if args.out_dir:
        json_path, png_path, doc_path = (args.out_dir / "benchmarks.json", args.out_dir / "benchmarks.png",
                                         args.out_dir / "benchmarks.md")
    elif args.quick:
        out = Path(tempfile.mkdtemp(prefix="bench-quick-"))
        json_path, png_path, doc_path = out / "benchmarks.json", out / "benchmarks.png", out / "benchmarks.md"
    else:
        json_path = ROOT / "results" / "benchmarks.json"
        png_path, doc_path = ROOT / "docs" / "img" / "benchmarks.png", ROOT / "docs" / "benchmarks.md"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    results = json.loads(json_path.read_text()) if json_path.exists() else {}
    results.setdefault("items", {})
    if args.merge:
        merge(results, args.merge)
        write(json_path, results, command)
        return render(results, json_path, png_path, doc_path)
    results["environment"] = environment(plan)
    workdir = Path(tempfile.mkdtemp(prefix="bench-work-"))
    for name in args.items:
        print(f"[bench] {name} started, load {loadavg()}", file=sys.stderr, flush=True)
        # Each item names the code it measured (taken before it runs): items re-run alone come from
        # different commits.
        source = source_state()
        results["items"][name] = {**run_item(name, plan, workdir), "source": source}
        write(json_path, results, command)  # produced_by: this command, the commit, the machine
        entry = results["items"][name]
        print(f"[bench] {name}: {entry['status']} in {entry['wall_s']} s", file=sys.stderr, flush=True)
    return render(results, json_path, png_path, doc_path)


def merge(results: dict, others: list[Path]) -> None:
    """Take each item that ran well elsewhere, unless this file has it done well and more recently."""
    for other in others:
        data = json.loads(other.read_text())
        results.setdefault("environment", data.get("environment", {}))
        for name, entry in data.get("items", {}).items():
            mine = results["items"].get(name, {})
            newer = entry.get("finished_at", 0) > mine.get("finished_at", 0)
            if entry.get("status") == "ok" and (mine.get("status") != "ok" or newer):
                results["items"][name] = entry


def render(results: dict, json_path: Path, png_path: Path, doc_path: Path) -> int:
    from support import bench_plot as plot, bench_report as report

    plot.draw(results, png_path)
    report.write(results, doc_path)
    print(f"[bench] wrote {json_path}, {png_path}, {doc_path}", file=sys.stderr)
    print(report.table(results))
    return 0 if all(entry["status"] == "ok" for entry in results["items"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
