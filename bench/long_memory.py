"""``python -m bench.long_memory [--minutes 15 60 120 240] [--baseline COMMIT]``: the embedded diarizer's
peak resident memory, time, speaker count and DER on long recordings (issue 62).

The long recordings are audio/long/fillets_long.flac (13.4 min, two voices) repeated to each length, a
little silence between copies that grows with each copy (so the 10 s windows fall differently on every
copy); the reference is its RTTM shifted by the same offsets. Each length runs in a fresh process (the
peak is that process's VmHWM): the models loaded, the samples made, then the diarizer's peak over that.
``--baseline COMMIT`` also runs the diarizer of that commit (``git archive`` into a temporary folder,
first on the path), for the before/after table. Writes results/long_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG = ROOT / "audio" / "long" / "fillets_long"
RATE = 16000
GAP_S, GAP_GROWTH_S = 1.7, 0.31  # silence after copy k: GAP_S + k * GAP_GROWTH_S


def long_recording(minutes: float):
    """(samples, reference Annotation): the 13.4 min file repeated with growing gaps, cut at ``minutes``."""
    import numpy as np
    from pyannote.core import Annotation, Segment

    from support.audio import decode_reference
    from support.metrics import read_rttm

    once, turns = decode_reference(LONG.with_suffix(".flac")), read_rttm(LONG.with_suffix(".rttm"))
    total = round(minutes * 60 * RATE)
    pieces, reference, at, copy = [], Annotation(uri="long"), 0, 0
    while at < total:
        offset = at / RATE
        for turn, _, speaker in turns.itertracks(yield_label=True):
            if offset + turn.start < minutes * 60:
                reference[Segment(offset + turn.start, min(offset + turn.end, minutes * 60))] = speaker
        gap = np.zeros(round((GAP_S + copy * GAP_GROWTH_S) * RATE), dtype=np.float32)
        pieces += [once, gap]
        at += len(once) + len(gap)
        copy += 1
    samples = np.concatenate(pieces)[:total]
    del pieces
    return samples, reference


def child(minutes: float) -> dict:
    """One length in this process: what the report records."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from support.measure import peak_rss_mib, reset_peak_rss, rss_mib
    from support.metrics import annotation, der
    from whisper_endpoint.diarization import EMBEDDED, load_diarizer

    diarizer = load_diarizer(EMBEDDED)
    loaded = rss_mib()
    samples, reference = long_recording(minutes)
    clustered = []  # how many embeddings the global clustering took, and how many it linked
    clustering = diarizer.pipeline.clustering
    cluster = clustering.cluster

    def counted(embeddings, *args, **kwargs):
        clustered.append(len(embeddings))
        return cluster(embeddings, *args, **kwargs)

    clustering.cluster = counted
    with_samples = rss_mib()
    reset_peak_rss()
    started = time.perf_counter()
    found = diarizer.diarize(samples)
    seconds = time.perf_counter() - started
    peak = peak_rss_mib()
    scores = der(reference, annotation(found.exclusive), len(samples) / RATE)
    return {
        "minutes": minutes, "rss_loaded_mib": loaded, "rss_with_samples_mib": with_samples, "peak_rss_mib": peak,
        "peak_over_samples_mib": round(peak - with_samples, 1), "seconds": round(seconds, 1),
        "embeddings_clustered": clustered[0] if clustered else None,
        "linked_at_most": getattr(clustering, "max_linked", None),
        **scores,
    }


def run_child(minutes: float, code: Path | None) -> dict:
    path = os.pathsep.join([str(code)] * (code is not None) + [str(ROOT)])
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([sys.executable, __file__, "--child", str(minutes), "--out", out.name], env=env, check=True)
        return json.loads(Path(out.name).read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[15, 60, 120, 240])
    parser.add_argument("--baseline", help="a commit whose diarizer is measured too (before/after)")
    parser.add_argument("--variants", nargs="+", default=["baseline", "current"])
    parser.add_argument("--child", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(ROOT / "results" / "long_memory.json"))
    args = parser.parse_args()
    if args.child is not None:
        Path(args.out).write_text(json.dumps(child(args.child)))
        return
    from support.results import write  # run as ``python -m bench.long_memory`` from the repository

    command = "python -m bench.long_memory " + " ".join(sys.argv[1:])
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as folder:
        code = None
        if args.baseline:
            code = Path(folder)
            archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
        for minutes in args.minutes:
            for variant in args.variants:
                if variant == "baseline" and code is None:
                    continue
                measured = run_child(minutes, code if variant == "baseline" else None)
                measured["command"] = command
                measured["commit"] = args.baseline if variant == "baseline" else head
                print(variant, json.dumps(measured), flush=True)
                results.setdefault(variant, {})[f"{minutes:g}"] = measured
                write(out, results, command)


if __name__ == "__main__":
    main()
