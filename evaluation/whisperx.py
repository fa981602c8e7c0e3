"""Long audio side by side: our handler at its defaults against WhisperX's transcription, same model.

    .venv/bin/python -m evaluation whisperx [--whisperx-python /work/venvs/whisperx/bin/python] [--backend transformers]
        [--out results/whisperx.json] [--set beam_size=5 ...]

WhisperX (3.8.6, in its own virtual environment: it pins its own torch) runs in a child process on the
same CTranslate2 model directory as our embedded base, int8 on CPU, with its defaults: pyannote VAD
chunks of at most 30 s, beam 5, no conditioning on previous text, no timestamps in decoding, no
alignment. Both sides run on one thread (CPU_THREADS=1, torch and OpenMP threads 1) and are timed in
process CPU time around the transcription of each file (model loading excluded). Files: the dev
dialogues (fillets_barrel, fillets_cave, flite_meeting: the tuning files), the 13.4 min fillets_long and
the Japanese meeting (never tuned on; CER). Text is scored with support/metrics.py (Whisper's
BasicTextNormalizer), and for every file the longest runs of reference words each side lost, with
their times (from the reference turns, spread evenly over a turn's words), and repeated phrases.
``--set name=value`` decodes our side with a request parameter changed (to measure one change alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUNING = ["dialogues/fillets_barrel", "dialogues/fillets_cave", "dialogues/flite_meeting"]
UNTUNED = ["long/fillets_long", "ja/kokoro_ja_meeting"]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CPU_THREADS": "1", "HF_HUB_OFFLINE": "1"}

# Runs in WhisperX's environment: reads a JSON list of files on stdin, prints one JSON line per file.
WHISPERX_WORKER = r"""
import json, sys, time
import soundfile, numpy as np, torch
torch.set_num_threads(1)
import whisperx
model_dir, paths = json.loads(sys.stdin.read())
model = whisperx.load_model(model_dir, device="cpu", compute_type="int8", vad_method="pyannote", threads=1)
for path in paths:
    audio, rate = soundfile.read(path, dtype="float32")
    assert rate == 16000 and audio.ndim == 1, (path, rate, audio.shape)
    started = time.process_time()
    result = model.transcribe(audio)
    cpu = time.process_time() - started
    text = " ".join(s["text"].strip() for s in result["segments"])
    print(json.dumps({"path": path, "cpu_s": cpu, "text": text, "language": result["language"],
                      "segments": [[s["start"], s["end"]] for s in result["segments"]]}), flush=True)
"""


def reference(stem: str) -> tuple[str, list[tuple[str, float]]]:
    """The reference text and each normalised word with its estimated time."""
    from support.metrics import normalize

    turns = json.loads((ROOT / "audio" / f"{stem}.json").read_text())["turns"]
    timed = []
    for turn in turns:
        words = normalize(turn["text"]).split()
        step = (turn["end"] - turn["start"]) / max(1, len(words))
        timed += [(word, turn["start"] + (i + 0.5) * step) for i, word in enumerate(words)]
    joiner = "" if stem.startswith("ja/") else " "
    return joiner.join(t["text"] for t in turns), timed


def losses(stem: str, hypothesis: str, top: int = 3) -> dict:
    """Where the words were lost: the longest runs of deleted reference words, the repeated phrases."""
    import jiwer

    from support.metrics import normalize

    text, timed = reference(stem)
    if stem.startswith("ja/"):  # characters are the units: each with its turn's time
        return {}
    ref, hyp = normalize(text), normalize(hypothesis)
    out = jiwer.process_words(ref, hyp)
    runs = []
    for chunk in out.alignments[0]:
        if chunk.type == "delete":
            runs.append((chunk.ref_end_idx - chunk.ref_start_idx, chunk.ref_start_idx, chunk.ref_end_idx))
        elif chunk.type == "substitute" and chunk.ref_end_idx - chunk.ref_start_idx >= 4:
            runs.append((chunk.ref_end_idx - chunk.ref_start_idx, chunk.ref_start_idx, chunk.ref_end_idx))
    runs.sort(reverse=True)
    words = hyp.split()
    return {
        "deleted": out.deletions, "inserted": out.insertions, "substituted": out.substitutions,
        "longest_lost_runs": [
            {"words": n, "from_s": round(timed[a][1], 1), "to_s": round(timed[b - 1][1], 1),
             "text": " ".join(w for w, _ in timed[a:b])[:120]}
            for n, a, b in runs[:top]
        ],
        "repeated_phrases": repeats(words),
    }


def repeats(words: list[str], times: int = 3) -> list[str]:
    """Phrases of 1 to 6 words said ``times`` or more times in a row (a decoder loop)."""
    found = []
    i = 0
    while i < len(words):
        for size in range(1, 7):
            phrase = words[i: i + size]
            count = 1
            while words[i + count * size: i + (count + 1) * size] == phrase:
                count += 1
            if count >= times:
                found.append(f"{' '.join(phrase)} x{count}")
                i += count * size - 1
                break
        i += 1
    return found


def score(stem: str, hypothesis: str) -> float:
    from support.metrics import cer, wer

    text, _ = reference(stem)
    return 100 * (cer if stem.startswith("ja/") else wer)([text], [hypothesis])


def run_ours(stems: list[str], overrides: dict, backend: str = "ctranslate2") -> dict:
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", cpu_threads=1, asr_backend=backend))
    rows = {}
    for stem in stems:
        data = (ROOT / "audio" / f"{stem}.flac").read_bytes()
        started = time.process_time()
        result = handler({"inputs": data, "parameters": {"diarize": False, **overrides}})
        rows[stem] = {"cpu_s": time.process_time() - started, "text": result["text"],
                      "language": result.get("language"), "decoding": result.get("decoding")}
    return rows


def run_whisperx(python: str, stems: list[str]) -> dict:
    from whisper_endpoint.weights import embedded
    from whisper_endpoint.core.config import ModelSettings

    model_dir = str(embedded.assemble(embedded.MODELS["base"], ModelSettings().model_cache_dir))
    paths = [str(ROOT / "audio" / f"{stem}.flac") for stem in stems]
    done = subprocess.run([python, "-c", WHISPERX_WORKER], input=json.dumps([model_dir, paths]), text=True,
                          capture_output=True, env={**os.environ, **ONE_THREAD}, check=False)
    if done.returncode:
        sys.exit(f"WhisperX failed:\n{done.stderr[-3000:]}")
    rows = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            rows[stems[paths.index(row.pop("path"))]] = row
    return rows


def pooled(stems: list[str], side: dict) -> float:
    from support.metrics import wer

    return 100 * wer([reference(s)[0] for s in stems], [side[s]["text"] for s in stems])


def _parameter(item: str) -> tuple[str, object]:
    name, value = item.split("=", 1)
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value  # a plain string (return_timestamps=none)


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("whisperx")
    options.add_argument("--whisperx-python", default="/work/venvs/whisperx/bin/python")
    options.add_argument("--files", nargs="+", default=TUNING + UNTUNED)
    options.add_argument("--set", nargs="*", default=[], help="request parameters for our side, name=value")
    options.add_argument("--skip-whisperx", action="store_true", help="our side only (a change measured alone)")
    options.add_argument("--backend", choices=["ctranslate2", "transformers"], default="ctranslate2",
                         help="our side's engine")
    args = options.parse_args(argv)
    overrides = dict(_parameter(item) for item in args.set)
    os.environ.update(ONE_THREAD)
    import torch

    torch.set_num_threads(1)  # our transformers backend's (CTranslate2 takes cpu_threads)
    ours = run_ours(args.files, overrides, args.backend)
    theirs = {} if args.skip_whisperx else run_whisperx(args.whisperx_python, args.files)
    sides = {"ours": ours, **({"whisperx": theirs} if theirs else {})}
    files = []
    for stem in args.files:
        row = {"file": stem, "tuning": stem in TUNING, "metric": "cer" if stem.startswith("ja/") else "wer"}
        for name, side in sides.items():
            row[name] = {"error_pct": round(score(stem, side[stem]["text"]), 2),
                         "cpu_s": round(side[stem]["cpu_s"], 2), "language": side[stem]["language"],
                         **losses(stem, side[stem]["text"]), "text": side[stem]["text"]}
            if "decoding" in side[stem]:  # our windows: how many, how many remainders decoded again
                row[name]["decoding"] = side[stem]["decoding"]
        files.append(row)
    summary = {}
    for group, stems in (("tuning", [s for s in TUNING if s in args.files]),
                         ("dutch_and_english", [s for s in args.files if not s.startswith("ja/")])):
        if not stems:
            continue
        for name, side in sides.items():
            summary[f"{group}_pooled_wer_{name}"] = round(pooled(stems, side), 2)
            summary[f"{group}_cpu_s_{name}"] = round(sum(side[s]["cpu_s"] for s in stems), 2)
        if theirs:
            summary[f"{group}_cpu_ratio_ours_to_whisperx"] = round(
                summary[f"{group}_cpu_s_ours"] / summary[f"{group}_cpu_s_whisperx"], 3)
    ours_model = "int8" if args.backend == "ctranslate2" else "transformers float32 (WhisperX: int8)"
    report = {"model": f"embedded:base, {ours_model}, CPU, one thread each", "backend": args.backend,
              "ours_parameters": overrides,
              "summary": summary, "files": files}
    for row in files:
        print(row["file"], {n: (row[n]["error_pct"], row[n]["cpu_s"]) for n in sides})
    print(json.dumps(summary, indent=2))
    save("whisperx", args.out, report, argv)
    return 0
