"""How many speakers the embedded diarizer finds, and its DER unhinted and told the count, on alike voices.

    python -m evaluation speaker_count [--sets tuning,judging,...] [--skip-long] [--out results/speaker_count.json]
    python -m evaluation speaker_count --line telephone_ulaw ...   # every file through that line first
    python -m evaluation speaker_count --table [results/speaker_count.json]   # the docs' table

Files: evaluation/speaker_count_sets.py (the alike-voice tuning and judging dialogues, the one-speaker
negatives, the dev files, the Japanese meeting and the 13.4 min file). Each is diarized twice by the
embedded pipeline as a request runs it: unhinted (the count is the diarizer's), and told the true count
(``num_speakers``). DER of the exclusive turns at both collars (``support.metrics.der``). A dialogue
belongs in its set when it holds an alike pair (speaker_count_sets.py).
"""

from __future__ import annotations

import functools
import json
import os
import time
from pathlib import Path

import numpy as np

from evaluation.speaker_count_sets import SETS, TUNED, centroid_similarities, load, reference_similarity
from support.metrics import annotation, der
from support.paths import RESULTS
from support.rooms_generator import load as generator
from whisper_endpoint.diarization.base import COUNT_UNCERTAIN

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")


def diarize(diarizer, file, **count) -> tuple[dict, float]:
    """The score of one run (with ``uncertain``: whether the response said the count was uncertain), and
    its CPU seconds."""
    started = time.process_time()
    found = diarizer.diarize(file.samples, **count)
    cpu = time.process_time() - started
    uncertain = any(note.startswith(COUNT_UNCERTAIN) for note in found.warnings)
    return der(file.reference, annotation(found.exclusive), file.duration) | {"uncertain": uncertain}, cpu


def through(line: str | None, file):
    """``file`` as heard through ``line`` (a telephone condition of audio/generate/rooms.py: its band and
    codec, without the line's hiss), or as it is."""
    if line is None:
        return file
    import dataclasses
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        heard = generator().telephone(file.samples.astype(np.float64), line, Path(work))
    return dataclasses.replace(file, samples=heard.astype(np.float32))


def evaluate(sets: tuple[str, ...], line: str | None = None) -> dict:
    from whisper_endpoint.diarization.loader import load_diarizer

    diarizer = load_diarizer("embedded", device="cpu")
    network = diarizer.pipeline.embedding_network
    alike = reference_similarity(network)
    rows = {}
    for file in map(functools.partial(through, line), load(sets)):
        unhinted, cpu = diarize(diarizer, file)
        told, _ = diarize(diarizer, file, num_speakers=len(file.reference.labels()))
        pairs = centroid_similarities(file, network)
        rows[file.name] = {
            "set": file.set, "tuned_on": file.set in TUNED, "source": file.source,
            "duration_s": round(file.duration, 1), "speakers_true": len(file.reference.labels()),
            "alike_pairs": {pair: value for pair, value in pairs.items() if value >= alike},
            "unhinted": unhinted, "told_the_count": told, "cpu_s": round(cpu, 1),
        }
        print(markdown_row(file.name, rows[file.name]), flush=True)
    return {
        "metric": "DER (%) of the exclusive turns at pyannote.metrics collars 0 and 0.25, overlap scored; "
                  "unhinted: the diarizer's own count; told_the_count: num_speakers given",
        "alike_reference": {"pair": "kokoro_ja_meeting jf_alpha / jf_nezumi", "similarity": alike,
                            "how": "cosine of CAM++ centroids, each the mean of unit embeddings of the "
                                   "speaker's reference turns, every turn embedded alone"},
        "line": line or "none (as built)",
        "diarizer_threads": diarizer.threads,
        "files": rows,
        "summary": summary(rows),
    }


def summary(rows: dict) -> dict:
    result = {}
    for name in SETS:
        files = [r for r in rows.values() if r["set"] == name]
        if files:
            result[name] = {
                "files": len(files),
                "count_right": sum(r["unhinted"]["speakers_found"] == r["speakers_true"] for r in files),
                **{f"mean_{key}": round(sum(r[key]["der_collar_0.25"] for r in files) / len(files), 2)
                   for key in ("unhinted", "told_the_count")},
            }
    return result


def markdown_row(name: str, row: dict) -> str:
    pairs = ", ".join(f"{pair} {value:.2f}" for pair, value in row["alike_pairs"].items()) or "-"
    unhinted, told = row["unhinted"], row["told_the_count"]
    return (f"| {name} | {row['set']}{' (tuned on)' if row['tuned_on'] else ''} | {row['speakers_true']} | "
            f"{unhinted['speakers_found']} | {unhinted['der_collar_0']:.2f}% / {unhinted['der_collar_0.25']:.2f}% | "
            f"{told['der_collar_0']:.2f}% / {told['der_collar_0.25']:.2f}% | {pairs} |")


def table(result: dict) -> str:
    lines = ["| file | set | speakers | found | DER unhinted (collar 0 / 0.25) | DER told the count | alike pairs |",
             "|---|---|---|---|---|---|---|"]
    lines += [markdown_row(name, row) for name, row in result["files"].items()]
    lines += ["", "| set | files | count right | mean DER unhinted (0.25) | mean DER told the count (0.25) |",
              "|---|---|---|---|---|"]
    lines += [f"| {name} | {s['files']} | {s['count_right']} | {s['mean_unhinted']:.2f}% | "
              f"{s['mean_told_the_count']:.2f}% |" for name, s in result["summary"].items()]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("speaker_count")
    options.add_argument("--sets", default=None, help=f"comma-separated sets (default: all of {', '.join(SETS)})")
    options.add_argument("--skip-long", action="store_true", help="leave out the 13.4 min file")
    options.add_argument("--line", choices=("telephone_ulaw", "telephone_alaw", "telephone_gsm"),
                         help="diarize every file as heard through this telephone line (the rooms sets' own)")
    options.add_argument("--table", nargs="?", const=RESULTS / "speaker_count.json", type=Path,
                         help="print the markdown table of a results file and stop")
    args = options.parse_args(argv)
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return 0
    sets = tuple(s for s in (args.sets.split(",") if args.sets else SETS) if not (args.skip_long and s == "long"))
    result = evaluate(sets, args.line)
    print(table(result))
    save("speaker_count", args.out, result, argv)
    return 0
