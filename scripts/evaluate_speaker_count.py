"""Speaker count and DER of the embedded diarizer before and after issue 28's count check.

    .venv/bin/python -m scripts.evaluate_speaker_count [--out results/speaker_count.json] [--threads 1] [--skip-long]
    .venv/bin/python -m scripts.evaluate_speaker_count --table [results/speaker_count.json]  # the README's table
    .venv/bin/python -m scripts.evaluate_speaker_count --sweep [--out results/speaker_count_sweep.json]
    .venv/bin/python -m scripts.evaluate_speaker_count --voice-changes '{}' --out results/voice_changes.json
    .venv/bin/python -m scripts.evaluate_speaker_count --voice-changes '{}' --params '{"bf16_lstm": true}'
    .venv/bin/python -m scripts.evaluate_speaker_count --voice-changes '{}' --dither 1  # DER's own spread
    .venv/bin/python -m scripts.evaluate_speaker_count --table results/voice_changes.json  # docs/voice_changes.md
    .venv/bin/python -m scripts.evaluate_speaker_count --table results/voice_changes.json \
        --before results/voice_changes_components.json  # the first count check's "after" against this one's

Files: scripts/speaker_count_sets.py (the alike-voice tuning and judging dialogues, the one-speaker
negatives, the four dev files, the Japanese meeting and the 13.4 min file). Each runs through one
pipeline that computes its segmentation and embeddings once (SharedFrontEnd): ``before`` with the
count check off (the diarizer until issue 28), ``after`` with the defaults, and told the true count
(``num_speakers``, when the check does not run, so it is the same before and after); ``--count-check``
sets other options for ``after``. With ``--voice-changes`` (``VoiceChangeOptions`` as JSON, ``{}`` for the
defaults) ``after`` also cuts turns where the voice changes (voice_changes.py) and ``without_voice_changes``
is the count check alone; without it the cut is off in every run. DER as in
scripts/evaluate_diarization.py (pyannote.metrics, 0.25 s collar, exclusive output).

A dialogue belongs in its set when it holds an alike pair (speaker_count_sets.py) and, told the true
count, today's diarizer scores at most ``FAIR_DER`` on it: voices the embedding cannot tell apart
even then say nothing about counting. ``--sweep`` runs the count check's settings over the files
it was tuned on (never the judging set or the held-out files).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.evaluate_diarization import COLLAR, ROOT, SharedFrontEnd, score  # noqa: E402
from scripts.speaker_count_sets import SETS, TUNED, centroid_similarities, load, reference_similarity  # noqa: E402

FAIR_DER = 15.0
SWEEP = {"separation": [0.1, 0.12, 0.13, 0.14, 0.15, 0.16], "min_speech": [3.0, 4.0, 5.0]}


def pipeline(threads: int | None, params: dict | None = None):
    import torch

    from whisper_endpoint.diarization import pyannote_quietly

    if threads:
        torch.set_num_threads(threads)
    with pyannote_quietly():
        from whisper_endpoint.diarization.offline import OfflineSpeakerDiarization

        diarizer = OfflineSpeakerDiarization(**(params or {}))
    SharedFrontEnd(diarizer)
    return diarizer


def keep_frames(diarizer) -> None:
    """Also memoise the CAM++ frames the embeddings step keeps for the checks (SharedFrontEnd skips that
    step for a file it has seen, and the checks would run CAM++ over the input again)."""
    from whisper_endpoint.diarization.offline import _FRAMES

    inner, stores = diarizer.get_embeddings, {}

    def get_embeddings(file, binarized, exclude_overlap=False, hook=None):
        kept = _FRAMES.get()
        had = len(kept) if kept is not None else 0
        result = inner(file, binarized, exclude_overlap=exclude_overlap, hook=hook)
        if kept is not None and len(kept) > had:
            stores[file["uri"]] = kept[-1]
        elif kept is not None and file["uri"] in stores:
            kept.append(stores[file["uri"]])
        return result

    diarizer.get_embeddings = get_embeddings


def diarize(diarizer, file, count_check, **count) -> tuple[dict, float]:
    """The score of one run, and its CPU seconds."""
    import torch

    diarizer.count_check = count_check
    started = time.process_time()
    output = diarizer({"waveform": torch.from_numpy(file.samples)[None], "sample_rate": 16000, "uri": file.name},
                      **count)
    cpu = time.process_time() - started
    return score(file.reference, output.exclusive_speaker_diarization, file.duration), cpu


def evaluate(threads: int | None, sets: tuple[str, ...], options: dict, changes: dict | None = None,
             params: dict | None = None, dither: int | None = None) -> dict:
    from whisper_endpoint.diarization.count_check import CountCheckOptions
    from whisper_endpoint.diarization.voice_changes import VoiceChangeOptions

    check = CountCheckOptions(**options)
    cut = None if changes is None else VoiceChangeOptions(**changes)
    diarizer = pipeline(threads, params)
    diarizer.voice_changes = None
    if cut is not None:
        return {**evaluate_cut(diarizer, sets, check, cut, dither), **_settings(diarizer), "dither_seed": dither}
    network = diarizer.embedding_network
    alike = reference_similarity(network)
    rows = {}
    for file in load(sets, dither):
        before, first_cpu = diarize(diarizer, file, None)  # computes (and caches) the front end
        _, cached_cpu = diarize(diarizer, file, None)
        after, after_cpu = diarize(diarizer, file, check)
        told, _ = diarize(diarizer, file, None, num_speakers=len(file.reference.labels()))
        pairs = centroid_similarities(file, network)
        rows[file.name] = {
            "set": file.set, "tuned_on": file.set in TUNED, "source": file.source,
            "duration_s": round(file.duration, 1), "speakers_true": len(file.reference.labels()),
            "alike_pairs": {pair: value for pair, value in pairs.items() if value >= alike},
            "before": before, "after": after, "der_told_the_count": told["der"],
            "cpu_s": round(first_cpu, 1), "count_check_cpu_s": round(max(after_cpu - cached_cpu, 0.0), 2),
        }
        print(markdown_row(file.name, rows[file.name]), flush=True)
    return {
        "metric": f"DER (%), collar {COLLAR} s, exclusive output; before: count check off; after: count_check; "
                  "der_told_the_count: num_speakers given (no count check)",
        "count_check": dataclasses.asdict(check),
        "alike_reference": {"pair": "kokoro_ja_meeting jf_alpha / jf_nezumi", "similarity": alike,
                            "how": "cosine of CAM++ centroids, each the mean of unit embeddings of the "
                                   "speaker's reference turns, every turn embedded alone"},
        "fair_der": FAIR_DER,
        "torch_threads": _threads(),
        **_settings(diarizer),
        "dither_seed": dither,
        "files": rows,
        "summary": summary(rows),
    }


def _settings(diarizer) -> dict:
    """The pipeline settings a run's DER depends on that its command may have changed."""
    return {"segmentation_step": diarizer.segmentation_step, "bf16_lstm": diarizer.bf16_lstm}


def evaluate_cut(diarizer, sets: tuple[str, ...], check, cut, dither: int | None = None) -> dict:
    """The count check alone (``without_voice_changes``) against it with the cut of turns where the voice
    changes (``after``), and told the true count; the front end and its CAM++ frames computed once per file,
    so ``cpu_s`` is the whole diarizer's first run and ``voice_changes_cpu_s`` what the cut adds to a run."""
    keep_frames(diarizer)
    rows = {}
    for file in load(sets, dither):
        without, cpu = diarize(diarizer, file, check)
        _, again_cpu = diarize(diarizer, file, check)
        diarizer.voice_changes = cut
        after, cut_cpu = diarize(diarizer, file, check)
        diarizer.voice_changes = None
        told, _ = diarize(diarizer, file, None, num_speakers=len(file.reference.labels()))
        rows[file.name] = {
            "set": file.set, "tuned_on": file.set in TUNED, "source": file.source,
            "duration_s": round(file.duration, 1), "speakers_true": len(file.reference.labels()), "alike_pairs": {},
            "without_voice_changes": without, "after": after, "der_told_the_count": told["der"],
            "cpu_s": round(cpu, 1), "voice_changes_cpu_s": round(max(cut_cpu - again_cpu, 0.0), 2),
        }
        print(markdown_row(file.name, rows[file.name]), flush=True)
    return {
        "metric": f"DER (%), collar {COLLAR} s, exclusive output; without_voice_changes: the count check alone; "
                  "after: voice_changes then the count check; der_told_the_count: num_speakers given (neither runs)",
        "count_check": dataclasses.asdict(check), "voice_changes": dataclasses.asdict(cut),
        "torch_threads": _threads(), "files": rows, "summary": summary(rows),
    }


def summary(rows: dict) -> dict:
    result = {}
    for name in SETS:
        files = {k: r for k, r in rows.items() if r["set"] == name}
        if not files:
            continue
        first = {k: r["without_voice_changes"] if "without_voice_changes" in r else r["before"]
                 for k, r in files.items()}
        right = {"before": sum(first[k]["speakers_found"] == r["speakers_true"] for k, r in files.items()),
                 "after": sum(r["after"]["speakers_found"] == r["speakers_true"] for r in files.values())}
        result[name] = {
            "files": len(files), "count_right_before": right["before"], "count_right_after": right["after"],
            "der_change_worst": max(round(r["after"]["der"] - first[k]["der"], 2) for k, r in files.items()),
        }
        if all(r["speakers_true"] > 1 and "before" in r for r in files.values()):  # alike pairs, fair DER
            result[name]["qualify"] = sum(bool(r["alike_pairs"]) and r["der_told_the_count"] <= FAIR_DER
                                          for r in files.values())
    return result


def sweep(threads: int | None) -> dict:
    """Files given their true count by each setting of the count check, on the tuned-on sets only."""
    from whisper_endpoint.diarization.count_check import CountCheckOptions

    diarizer, files = pipeline(threads), load(tuple(sorted(TUNED)))
    grid = []
    for separation in SWEEP["separation"]:
        for min_speech in SWEEP["min_speech"]:
            options = CountCheckOptions(separation=separation, min_speech=min_speech)
            wrong = [f.name for f in files if diarize(diarizer, f, options)[0]["speakers_found"]
                     != len(f.reference.labels())]
            grid.append({"separation": separation, "min_speech": min_speech,
                         "count_right": len(files) - len(wrong), "wrong": wrong})
            print(f"separation {separation:.3f}, min_speech {min_speech:g} s: {len(files) - len(wrong)}/{len(files)}"
                  f" right {wrong or ''}", flush=True)
    return {"files": [f.name for f in files], "grid": grid, "torch_threads": _threads()}


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def markdown_row(name: str, row: dict) -> str:
    before, after = (row["without_voice_changes"] if "without_voice_changes" in row else row["before"]), row["after"]
    pairs = ", ".join(f"{pair} {value:.2f}" for pair, value in row["alike_pairs"].items()) or "-"
    return (f"| {name} | {row['set']}{' (tuned on)' if row['tuned_on'] else ''} | {row['speakers_true']} | "
            f"{before['speakers_found']} → {after['speakers_found']} | {before['der']:.2f}% → {after['der']:.2f}% | "
            f"{row['der_told_the_count']:.2f}% | {pairs} |")


def against(before: dict, after: dict) -> dict:
    """``after`` with its first column ("without") replaced by ``before``'s "after", for the files in both."""
    files = {name: {**row, "without_voice_changes": before["files"][name]["after"]}
             for name, row in after["files"].items() if name in before["files"]}
    return {**after, "files": files, "summary": summary(files)}


def table(result: dict, when: str | None = None) -> str:
    cut = any("without_voice_changes" in row for row in result["files"].values())
    when = when or ("without → with the voice-change cut" if cut else "before → after")
    lines = [f"| file | set | speakers | found {when} | DER {when} | DER told the count | alike pairs |",
             "|---|---|---|---|---|---|---|"]
    lines += [markdown_row(name, row) for name, row in result["files"].items()]
    lines += ["", f"| set | files | count right {when.split(' → ')[0]} | count right {when.split(' → ')[1]} | "
                  "worst DER change (points) |",
              "|---|---|---|---|---|"]
    lines += [f"| {name} | {s['files']} | {s['count_right_before']} | {s['count_right_after']} | "
              f"{s['der_change_worst']:+.2f} |" for name, s in result["summary"].items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--sets", default=None, help=f"comma-separated sets (default: all of {', '.join(SETS)})")
    parser.add_argument("--skip-long", action="store_true", help="leave out the 13.4 min file")
    parser.add_argument("--count-check", type=json.loads, default={}, metavar="JSON",
                        help='CountCheckOptions for "after" other than the defaults, e.g. \'{"separation": 0.2}\'')
    parser.add_argument("--voice-changes", type=json.loads, default=None, metavar="JSON",
                        help="VoiceChangeOptions ('{}': the defaults); before then means the count check alone")
    parser.add_argument("--before", type=Path, default=None,
                        help="with --table: an earlier results file whose \"after\" is the first column")
    parser.add_argument("--segmentation-step", type=float, default=None,
                        help="the window step, as a fraction of the window (default: offline.SEGMENTATION_STEP)")
    parser.add_argument("--params", type=json.loads, default={}, metavar="JSON",
                        help='OfflineSpeakerDiarization keyword arguments, e.g. \'{"bf16_lstm": true}\'')
    parser.add_argument("--dither", type=int, default=None, metavar="SEED",
                        help="add one 16-bit step of triangular dither to every file (speaker_count_sets.dithered)")
    parser.add_argument("--sweep", action="store_true", help="the count check's settings on the tuned-on files")
    parser.add_argument("--table", nargs="?", const=ROOT / "results" / "speaker_count.json", type=Path,
                        help="print the markdown table of a results file and stop")
    args = parser.parse_args()
    if args.table:
        result = json.loads(args.table.read_text())
        if args.before:
            result = against(json.loads(args.before.read_text()), result)
        print(table(result, "with the first count check → now" if args.before else None))
        return 0
    if args.sweep:
        result = sweep(args.threads)
        out = args.out or ROOT / "results" / "speaker_count_sweep.json"
    else:
        sets = tuple(s for s in (args.sets.split(",") if args.sets else SETS) if not (args.skip_long and s == "long"))
        params = {**args.params, **({} if args.segmentation_step is None else
                                    {"segmentation_step": args.segmentation_step})}
        result = evaluate(args.threads, sets, args.count_check, args.voice_changes, params, args.dither)
        out = args.out or ROOT / "results" / "speaker_count.json"
        print(table(result))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
