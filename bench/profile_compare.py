"""Issue 19's before/after table: bench item 5's per-stage profiles of two versions of the code.

    python -m bench.profile_compare collect OUT.json COMMIT 300.0 804.0   # one fresh process per length
    python -m bench.profile_compare table results/diarization_profile_before.json \
        results/diarization_profile_after.json

``collect`` runs ``python -m bench.items.diarization full SECONDS`` (one thread) for each length and
writes OUT.json after each one, so a run cut short keeps the lengths it finished. ``table`` prints,
per length both files have, the CPU seconds of each stage before and after, their ratio, the
diarizer's CPU over the ASR's, and the diarized request's peak memory.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.report import _STAGES

_COLUMNS = (("ASR alone", None), *_STAGES, ("diarizer", "diarization"))


def collect(out: Path, commit: str, lengths: list[float]) -> None:
    from bench.items.diarization import _child
    from bench.plan import FULL

    result = {"what": "bench item 5 (bench/items/diarization.py one()), one fresh process per length, "
                      "OMP_NUM_THREADS=1, embedded:base + embedded diarization; CPU seconds per stage "
                      "(bench/stages.py), peak RSS per stage and of the whole diarized request",
              "command": "OMP_NUM_THREADS=1 python -m bench.items.diarization full SECONDS", "commit": commit,
              "lengths": []}
    for seconds in lengths:
        result["lengths"].append(_child(FULL, seconds))
        out.write_text(json.dumps(result, indent=1) + "\n")


def _cpu(row: dict, path: str | None) -> float:
    return row["asr_alone_cpu_s"] if path is None else row["stages"]["cpu_s"].get(path, 0.0)


def table(before: dict, after: dict) -> str:
    lines = ["| audio | " + " | ".join(f"{name} before / after (x)" for name, _ in _COLUMNS)
             + " | diarizer / ASR alone | peak RSS MiB |", "|---" * (len(_COLUMNS) + 3) + "|"]
    old = {row["audio_s"]: row for row in before["lengths"]}
    for new in after["lengths"]:
        if new["audio_s"] not in old:
            continue
        was = old[new["audio_s"]]
        cells = []
        for _, path in _COLUMNS:
            a, b = _cpu(was, path), _cpu(new, path)
            cells.append(f"{a:.1f} / {b:.1f} ({a / b:.1f}x)" if b else f"{a:.1f} / {b:.1f}")
        lines.append(f"| {new['audio_s'] / 60:.1f} min | " + " | ".join(cells)
                     + f" | {was['diarizer_over_asr']:.2f} / {new['diarizer_over_asr']:.2f} "
                     f"| {was['peak_rss_mib']:.0f} / {new['peak_rss_mib']:.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("collect")
    run.add_argument("out", type=Path)
    run.add_argument("commit")
    run.add_argument("lengths", type=float, nargs="+")
    show = sub.add_parser("table")
    show.add_argument("before", type=Path)
    show.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.out, args.commit, args.lengths)
    else:
        print(table(json.loads(args.before.read_text()), json.loads(args.after.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
