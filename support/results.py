"""One writer for results files: every file says what made it (``produced_by``: the command, the commit
and any uncommitted change to the code, the date, the CPU and the thread settings), so a figure in the
docs can be made again and a stale one can be told from a current one."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

from support.paths import RESULTS, ROOT

THREAD_VARIABLES = ("CPU_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "DIARIZATION_THREADS")


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.rstrip()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def produced_by(command: str) -> dict:
    """Provenance of a run started now by ``command`` (as a user would type it, from the repository root)."""
    # Porcelain lines start with a status column: strip only the line's end.
    changed = [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()]
    return {
        "command": command,
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": changed,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "threads": {name: os.environ.get(name) for name in THREAD_VARIABLES},
    }


def write(path: str | Path, data: dict, command: str) -> Path:
    """``data`` with its ``produced_by`` first, as indented JSON; a bare name goes to results/NAME.json."""
    path = Path(path)
    if path.parent == Path(".") and path.suffix == "":
        path = RESULTS / f"{path}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"produced_by": produced_by(command), **{k: v for k, v in data.items() if k != "produced_by"}}
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
