"""How far DER moves by chance, beside how far a change to the diarizer's arithmetic moves it.

A variant is one pipeline scored on the evaluation files as they are and on dithered copies of them
(``scripts.evaluate_speaker_count --voice-changes '{}' [--dither SEED]``: one 16-bit step of triangular
dither, 96 dB below full scale). The first variant is the reference. For each set this reports every
run's mean DER and count of files given the right number of speakers; for each other variant, its
mean DER minus the reference's, paired by input (the same seed) and over every input; and per file,
the largest move dither alone made in the reference against the variant's move on the files as they are.

    .venv/bin/python -m scripts.der_spread --variant float32 RUN.json [RUN.json ...] \\
        --variant bfloat16 RUN.json [...] [--out results/diarization_bf16_spread.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from scripts.speaker_count_sets import SETS

RUNS_MADE_BY = ("HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 .venv/bin/python -m scripts.evaluate_speaker_count --threads 1 "
                "--voice-changes '{}' [--dither SEED] [--params JSON] --out RUN.json (run_settings: each run's)")


def load_runs(paths: list[Path]) -> tuple[dict, list[dict]]:
    """seed (None: the files as they are) -> run's files; and each run's settings."""
    runs, settings = {}, []
    for path in paths:
        result = json.loads(path.read_text())
        runs[result.get("dither_seed")] = result["files"]
        settings.append({key: value for key, value in result.items() if key not in ("files", "summary", "metric")})
    return runs, settings


def set_means(files: dict) -> dict:
    """set -> its mean DER, how many files were given the right speaker count, and how many files."""
    result = {}
    for name in SETS:
        rows = [row for row in files.values() if row["set"] == name]
        if rows:
            result[name] = {"mean_der": round(statistics.fmean(r["after"]["der"] for r in rows), 3),
                            "count_right": sum(r["after"]["speakers_found"] == r["speakers_true"] for r in rows),
                            "files": len(rows)}
    return result


def spread(variants: dict[str, dict]) -> dict:
    names = list(variants)
    reference = variants[names[0]]
    def in_order(runs: dict) -> list:  # the files as they are first, then by seed
        return sorted(runs.items(), key=lambda kv: -1 if kv[0] is None else kv[0])

    runs = {name: {str(seed): set_means(files) for seed, files in in_order(v)} for name, v in variants.items()}
    comparisons = {}
    for name in names[1:]:
        shared = [seed for seed in variants[name] if seed in reference]
        per_set = {}
        for set_name in runs[names[0]][str(shared[0])]:
            paired = [runs[name][str(s)][set_name]["mean_der"] - runs[names[0]][str(s)][set_name]["mean_der"]
                      for s in shared]
            ref_means = [r[set_name]["mean_der"] for r in runs[names[0]].values()]
            var_means = [r[set_name]["mean_der"] for r in runs[name].values()]
            per_set[set_name] = {
                "paired_change_mean": round(statistics.fmean(paired), 3),
                "paired_changes": [round(x, 2) for x in paired],
                "reference_range": [min(ref_means), max(ref_means)],
                "variant_range": [min(var_means), max(var_means)],
                "reference_mean_over_runs": round(statistics.fmean(ref_means), 3),
                "variant_mean_over_runs": round(statistics.fmean(var_means), 3),
            }
        comparisons[name] = {"seeds_paired": [str(s) for s in shared], "sets": per_set,
                             "files": _file_moves(reference, variants[name])}
    return {"reference": names[0], "runs": runs, "comparisons": comparisons}


def _file_moves(reference: dict, variant: dict) -> dict:
    """Per file: the largest |change| dither alone made in the reference; the variant's change on the files
    as they are, and on each input both ran (paired: a change made by the variant, not by the input)."""
    plain = reference[None]
    moves = {}
    for name, row in plain.items():
        dithered = [abs(run[name]["after"]["der"] - row["after"]["der"]) for seed, run in reference.items()
                    if seed is not None]
        paired = [round(run[name]["after"]["der"] - reference[seed][name]["after"]["der"], 2)
                  for seed, run in variant.items() if seed in reference]
        moves[name] = {"set": row["set"], "dither_largest_move": round(max(dithered, default=0.0), 2),
                       "variant_move": round(variant[None][name]["after"]["der"] - row["after"]["der"], 2),
                       "variant_moves_paired": paired}
    return moves


def table(result: dict) -> str:
    lines = []
    for name, comparison in result["comparisons"].items():
        lines += [f"{name} against {result['reference']} (mean DER %, runs: {', '.join(comparison['seeds_paired'])})",
                  "", "| set | reference runs | variant runs | paired change (points) |", "|---|---|---|---|"]
        for set_name, row in comparison["sets"].items():
            paired = ", ".join(f"{x:+.2f}" for x in row["paired_changes"])
            lines.append(f"| {set_name} | {row['reference_range'][0]:.2f}-{row['reference_range'][1]:.2f} | "
                         f"{row['variant_range'][0]:.2f}-{row['variant_range'][1]:.2f} | "
                         f"{row['paired_change_mean']:+.2f} ({paired}) |")
        files = comparison["files"]
        beyond = sorted(n for n, f in files.items() if f["dither_largest_move"] > 0.3)
        moved = sorted(n for n, f in files.items() if abs(f["variant_move"]) > 0.3)
        lines += ["", f"files dither alone moved by over 0.3 points: {len(beyond)} ({', '.join(beyond)})",
                  f"files the variant moved by over 0.3 points: {len(moved)} ({', '.join(moved)})", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", nargs="+", action="append", required=True, metavar=("NAME", "RUN"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    loaded = {group[0]: load_runs([Path(p) for p in group[1:]]) for group in args.variant}
    result = spread({name: runs for name, (runs, _) in loaded.items()})
    print(table(result))
    if args.out:
        shown = [Path(arg).name if arg.endswith(".json") and arg != str(args.out) else arg for arg in sys.argv[1:]]
        command = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.der_spread " + " ".join(shown)
        made = {name: settings for name, (_, settings) in loaded.items()}
        args.out.write_text(json.dumps({"command": command, "runs_made_by": RUNS_MADE_BY, "run_settings": made,
                                        **result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
