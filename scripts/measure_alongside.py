"""A diarized request with its diarization alongside the ASR (the default) and after it, at the defaults
a user starts with (no thread variables) and on one thread (``CPU_THREADS=1``), each beside a plain
request in the same fresh process (bench item 5's ``one``), alternated. Writes results/diarization_alongside.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_alongside [--seconds 300] [--pairs 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "diarization_alongside.json"


def main() -> None:
    from bench.items.diarization import _child, threads_summary
    from bench.plan import by_name

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0, help="input length (the long Dutch file's start)")
    parser.add_argument("--pairs", type=int, default=1, help="rounds of the four runs")
    args = parser.parse_args()
    plan = by_name("full")
    runs = {True: [], False: []}
    for _ in range(args.pairs):
        for alongside in (True, False):
            for threads in (0, 1):
                row = _child(plan, args.seconds, threads=threads, alongside=alongside)
                runs[alongside].append(row)
                print(json.dumps({key: row[key] for key in ("threads", "alongside", "asr_alone_s", "asr_with_diarization_s",
                                                             "asr_with_diarization_cpu_s", "peak_rss_mib", "loadavg")}),
                      flush=True)

    def found(row: dict) -> tuple:
        return tuple(row["speakers"]), row["turns"], row["words"]

    # alongside against after at each thread count (the ASR's own thread count may move a word)
    same = {("defaults" if threads == 0 else "one_thread"): len({found(row) for row in runs[True] + runs[False]
                                                                 if row["threads"] == threads}) == 1
            for threads in (0, 1)}
    command = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_alongside " + " ".join(sys.argv[1:])
    OUT.write_text(json.dumps({"command": command.strip(), "cores": len(os.sched_getaffinity(0)),
                               "alongside": threads_summary(runs[True]), "after": threads_summary(runs[False]),
                               "same_speakers_turns_and_words": same}, indent=2) + "\n")
    print(OUT.read_text())


if __name__ == "__main__":
    main()
