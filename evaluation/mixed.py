"""Conversations in more than one language: per-segment languages vs the turns decoded alone (issue 58).

    python -m evaluation mixed [--out results/mixed.json] [--files NAME ...] [--threads 1] [--jobs 1]
                               [--cache DIR] [--backend transformers] [--compute-type float32]

On audio/mixed's conversations (Dutch, Czech and English speakers; the tune and the held-out check
set apart), with embedded:base on CTranslate2 (default compute type, no diarization) or on
``--backend transformers`` (float32 on CPU), rows:

- ``alone``: each reference turn cut out and decoded alone with its own language given: the reference
  point, what the ASR does when it knows each turn's language;
- ``defaults``: the whole file at the handler's defaults (language unset: a language per segment);
- ``languages``: the same with ``languages`` set to the file's languages (manifest.json);
- ``faster_whisper_multilingual`` (CTranslate2 only): faster-whisper's own ``transcribe(multilingual=True)``
  (its language per 30 s window), with its VAD filter, on the same model.

WER in % (Whisper's BasicTextNormalizer, jiwer) of all the turns' text against the hypothesis's, per
file and pooled over each set; ``ratio``: the pooled WER over the ``alone`` row's. Turn language: a
turn is right when the language of the response's segments overlapping it most is the turn's own.
CPU: process seconds per file. ``--jobs N``: N files at once, each in a process of its own;
``--cache DIR``: each file's rows are kept there as they finish and read back instead of run again
(on a busy machine the files can be run a few at a time, then put together in one results file).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from support.audio import pcm16_wav
from support.paths import AUDIO

MIXED = AUDIO / "mixed"
RATE = 16000


def manifest() -> list[dict]:
    return json.loads((MIXED / "manifest.json").read_text())["files"]


def turn_languages(turns: list[dict], chunks: list[dict]) -> list[str | None]:
    """For each reference turn, the language of the response's segments overlapping it most."""
    found = []
    for turn in turns:
        overlap = {}
        for chunk in chunks:
            start, end = chunk["timestamp"]
            shared = min(turn["end"], end) - max(turn["start"], start)
            if shared > 0 and chunk.get("language"):
                overlap[chunk["language"]] = overlap.get(chunk["language"], 0.0) + shared
        found.append(max(overlap, key=overlap.get) if overlap else None)
    return found


def _timed(run):
    started = time.process_time()
    result = run()
    return result, round(time.process_time() - started, 1)


def evaluate_file(handler, entry: dict) -> dict:
    from whisper_endpoint.audio.decode import decode_file

    path = MIXED / entry["file"]
    turns = json.loads(path.with_suffix(".json").read_text())["turns"]
    data = path.read_bytes()
    samples = decode_file(data, max_seconds=3600).samples
    rows = {}

    def alone():
        texts = []
        for turn in turns:
            piece = samples[int(turn["start"] * RATE): int(turn["end"] * RATE)]
            result = handler({"inputs": pcm16_wav(piece), "parameters": {"language": turn["language"]}})
            texts.append(result["text"])
        return " ".join(texts)

    rows["alone"] = dict(zip(("text", "cpu_s"), _timed(alone)))
    for name, parameters in (("defaults", {}), ("languages", {"languages": entry["languages"]})):
        result, cpu = _timed(lambda: handler({"inputs": data, "parameters": parameters}))
        said = turn_languages(turns, result["chunks"])
        rows[name] = {"text": result["text"], "cpu_s": cpu, "language": result["language"],
                      "languages": result["languages"],
                      "turn_languages_right": sum(s == t["language"] for s, t in zip(said, turns))}

    def multilingual():
        segments, _ = handler.asr.model.transcribe(samples, multilingual=True, vad_filter=True)
        return "".join(segment.text for segment in segments)

    if handler.asr.name == "ctranslate2":  # faster-whisper's own multilingual mode, for comparison
        rows["faster_whisper_multilingual"] = dict(zip(("text", "cpu_s"), _timed(multilingual)))
    reference = " ".join(turn["text"] for turn in turns)
    return {"set": entry["set"], "turns": len(turns), "duration_s": entry["duration"], "reference": reference,
            "rows": rows}


def pooled(files: dict, names: list[str]) -> dict:
    from support.metrics import wer

    references = [files[name]["reference"] for name in names]
    rows = {}
    for row in files[names[0]]["rows"]:
        rows[row] = {"wer": round(100 * wer(references, [files[n]["rows"][row]["text"] for n in names]), 2),
                     "cpu_s": round(sum(files[n]["rows"][row]["cpu_s"] for n in names), 1)}
        if "turn_languages_right" in files[names[0]]["rows"][row]:
            rows[row]["turn_languages_right"] = sum(files[n]["rows"][row]["turn_languages_right"] for n in names)
    for row in rows.values():
        row["ratio"] = round(row["wer"] / rows["alone"]["wer"], 2) if rows["alone"]["wer"] else None
    return {"files": len(names), "turns": sum(files[n]["turns"] for n in names), "rows": rows}


def with_wer(files: dict) -> dict:
    from support.metrics import wer

    for row_set in files.values():
        for row in row_set["rows"].values():
            row["wer"] = round(100 * wer([row_set["reference"]], [row["text"]]), 2)
    return files


def markdown_table(result: dict) -> str:
    lines = ["| set | turns | alone: WER | defaults: WER (ratio), turns right | languages given: WER (ratio), turns "
             "right | faster-whisper multilingual: WER (ratio) |", "|---|---|---|---|---|---|"]
    for name, pool in result["pooled"].items():
        rows = pool["rows"]
        lines.append(
            f"| {name} | {pool['turns']} | {rows['alone']['wer']:.1f}% "
            f"| {rows['defaults']['wer']:.1f}% ({rows['defaults']['ratio']:.2f}x), "
            f"{rows['defaults']['turn_languages_right']}/{pool['turns']} "
            f"| {rows['languages']['wer']:.1f}% ({rows['languages']['ratio']:.2f}x), "
            f"{rows['languages']['turn_languages_right']}/{pool['turns']} "
            + (f"| {rows['faster_whisper_multilingual']['wer']:.1f}% "
               f"({rows['faster_whisper_multilingual']['ratio']:.2f}x) |"
               if "faster_whisper_multilingual" in rows else "| - (CTranslate2 only) |"))
    return "\n".join(lines)


_handler = None


def _evaluate_in_process(entry: dict, threads: int, cache, backend: str, compute_type: str = "auto") -> dict:
    """One file, on this process's handler (loaded once per process), or its rows kept in ``cache``."""
    global _handler
    kept = cache / entry["file"].replace(".flac", ".json") if cache else None
    if kept is not None and kept.exists():
        return json.loads(kept.read_text())
    if _handler is None:
        import torch

        from whisper_endpoint.core.config import ModelSettings

        torch.set_num_threads(threads)  # the transformers backend's (CTranslate2 takes cpu_threads)
        from whisper_endpoint.handler import EndpointHandler

        _handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", cpu_threads=threads,
                                                          asr_backend=backend, compute_type=compute_type))
    row = evaluate_file(_handler, entry)
    print(entry["file"], {name: value["cpu_s"] for name, value in row["rows"].items()}, flush=True)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(row))
    return row


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    entries = manifest()
    options = parser("mixed")
    options.add_argument("--files", nargs="+", choices=[e["file"].removesuffix(".flac") for e in entries])
    options.add_argument("--threads", type=int, default=1, help="CPU threads of the ASR")
    options.add_argument("--jobs", type=int, default=1, help="files evaluated at once, one process each")
    options.add_argument("--cache", type=Path, help="keep each file's rows here; read them back instead of running")
    options.add_argument("--table", action="store_true", help="print the table of an existing --out file and stop")
    options.add_argument("--backend", choices=["ctranslate2", "transformers"], default="ctranslate2")
    options.add_argument("--compute-type", default="auto", help="COMPUTE_TYPE (float32: CTranslate2 as transformers "
                         "computes on CPU)")
    args = options.parse_args(argv)
    if args.table:
        print(markdown_table(json.loads(args.out.read_text())))
        return 0
    chosen = [e for e in entries if args.files is None or e["file"].removesuffix(".flac") in args.files]
    chosen.sort(key=lambda e: e["set"] != "check")  # the held-out files first
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        found = list(pool.map(_evaluate_in_process, chosen, [args.threads] * len(chosen), [args.cache] * len(chosen),
                              [args.backend] * len(chosen), [args.compute_type] * len(chosen)))
    files = with_wer({entry["file"].removesuffix(".flac"): row for entry, row in zip(chosen, found)})
    sets = {}
    for name, row in files.items():
        sets.setdefault(row["set"], []).append(name)
    result = {
        "asr": f"embedded:base, {args.backend} (compute type {args.compute_type}), no diarization",
        "backend": args.backend,
        "metrics": "WER in % (BasicTextNormalizer, jiwer), pooled per set; ratio: over the turns decoded alone with "
                   "their own language; turn language right: the segments overlapping a turn most are in its "
                   "language; CPU: process seconds",
        "threads": args.threads,
        "pooled": {name: pooled(files, names) for name, names in sets.items()},
        "files": files,
    }
    save("mixed", args.out, result, argv)
    print(markdown_table(result))
    return 0
