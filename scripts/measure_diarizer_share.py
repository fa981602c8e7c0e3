"""The diarizer's CPU time over the ASR it labels, and a diarized request's wall time over a plain one's.

Bench item 5's own measurement (``bench.items.diarization.one``: a plain and a diarized request through
the handler, embedded:base on the long Dutch file, each length in a fresh process) without the rest of
the item: one thread at each length, then the defaults a user starts with (no thread variables) beside
``CPU_THREADS=1`` (one thread), alternated. Writes results/diarization_share.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_diarizer_share [--lengths 300 804 1608] [--threads-s 154]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "diarization_share.json"
KEYS = ("audio_s", "threads", "asr_alone_s", "asr_with_diarization_s", "asr_alone_cpu_s", "asr_with_diarization_cpu_s",
        "diarizer_over_asr", "peak_rss_mib", "loadavg")


def main() -> None:
    from bench.items.diarization import _child, threads_summary
    from bench.plan import by_name

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=float, nargs="*", default=[300.0, 804.0, 1608.0])
    parser.add_argument("--threads-s", type=float, default=154.0, help="the defaults-beside-one-thread input length")
    parser.add_argument("--pairs", type=int, default=1, help="defaults / one-thread pairs (0: none)")
    args = parser.parse_args()
    plan = by_name("full")
    lengths = []
    for seconds in args.lengths:
        row = _child(plan, seconds)
        lengths.append({key: row[key] for key in KEYS} | {"diarizer_cpu_s": row["stages"]["cpu_s"].get("diarization"),
                                                          "stages_cpu_s": row["stages"]["cpu_s"]})
        print(json.dumps(lengths[-1]), flush=True)
    runs = [_child(plan, args.threads_s, threads=threads) for threads in (0, 1) * args.pairs]
    threads = threads_summary(runs) if runs else None  # --pairs 0: scripts.measure_alongside measures them
    print(json.dumps(threads), flush=True)
    command = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_diarizer_share " + " ".join(sys.argv[1:])
    OUT.write_text(json.dumps({"command": command.strip(), "cores": len(os.sched_getaffinity(0)),
                               "one_thread": lengths, "threads": threads}, indent=2) + "\n")


if __name__ == "__main__":
    main()
