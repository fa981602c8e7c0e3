"""DER of the embedded diarizer on every recording with ground truth, at both collars, and its CPU time.

    python -m evaluation diarization [--files NAME ...] [--out results/diarization.json]
    python -m evaluation diarization --files fillets_long --window-check-cost 3   # results/window_check_cost.json

The diarizer as a request runs it (``load_diarizer("embedded")``, its default threads), on the dev
dialogues (tuned on), pyannote's own sample, and the two recordings never tuned on: the Japanese meeting
and the 13.4 min Dutch file. DER of its exclusive turns (what the word/speaker merge uses) against the
RTTM, overlap scored, at collars 0 and 0.25 (``support.metrics.der``); missed, false alarm and
confusion as % of scored speech (collar 0). This is the one DER per file the docs quote; the historical
ladder of pipeline variants is frozen in results/archive/diarization_quality.json.

``--window-check-cost N``: the diarizer's process CPU time on each file with the window check and
without it, the two interleaved for N rounds (the order alternating); the ratio of the summed medians.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from support.paths import AUDIO, ROOT

# name: (audio, RTTM, tuned on); None: pyannote's sample inside its package
FILES = {
    "fillets_barrel": (AUDIO / "dialogues" / "fillets_barrel.flac", True),
    "fillets_cave": (AUDIO / "dialogues" / "fillets_cave.flac", True),
    "flite_meeting": (AUDIO / "dialogues" / "flite_meeting.flac", True),
    "pyannote_sample": (None, True),
    "kokoro_ja_meeting": (AUDIO / "ja" / "kokoro_ja_meeting.flac", False),
    "fillets_long": (AUDIO / "long" / "fillets_long.flac", False),
}


def recording(name: str) -> tuple[Path, Path]:
    """The file's audio and its RTTM."""
    path = FILES[name][0]
    if path is None:
        import pyannote.audio

        sample = Path(pyannote.audio.__file__).parent / "sample"
        return sample / "sample.wav", sample / "sample.rttm"
    return path, path.with_suffix(".rttm")


def shown(path: Path) -> str:
    """A path as it reads on any machine: inside the repository, or inside a package."""
    for base, prefix in ((Path(sys.prefix), "<venv>/"), (ROOT, "")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)


def decode(path: Path):
    from whisper_endpoint.audio.decode import decode_file

    return decode_file(path.read_bytes(), max_seconds=4 * 3600).samples


def scored(rttm: Path, turns, duration: float) -> dict:
    """DER at both collars, its parts as % of scored speech, and the speaker counts."""
    from support.metrics import annotation, der, read_rttm

    scores = der(read_rttm(rttm), annotation(turns), duration)
    speech = scores.pop("scored_speech")
    for part in ("missed", "false_alarm", "confusion"):
        scores[f"{part}_pct"] = round(100 * scores.pop(part) / speech, 2) if speech else 0.0
    return scores


def window_check_cost(diarizer, recordings: dict, rounds: int) -> dict:
    """CPU seconds per file with the window check and without it, interleaved; the ratio of summed medians."""
    pipeline, check = diarizer.pipeline, diarizer.pipeline.window_check
    cpu: dict[str, dict[str, list[float]]] = {"with": {}, "without": {}}
    try:
        for r in range(rounds):
            for i, (name, samples) in enumerate(recordings.items()):
                for which in (("with", "without") if (r + i) % 2 == 0 else ("without", "with")):
                    pipeline.window_check = check if which == "with" else None
                    started = time.process_time()
                    diarizer.diarize(samples)
                    cpu[which].setdefault(name, []).append(round(time.process_time() - started, 2))
    finally:
        pipeline.window_check = check
    total = {which: sum(statistics.median(times) for times in per_file.values()) for which, per_file in cpu.items()}
    return {"rounds": rounds, "cpu_s": cpu, "ratio": round(total["with"] / total["without"], 3)}


def main(argv: list[str]) -> int:
    from evaluation import parser, save
    from whisper_endpoint.diarization.loader import load_diarizer

    options = parser("diarization")
    options.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    options.add_argument("--window-check-cost", type=int, default=0, metavar="N",
                         help="only the window check's cost: N interleaved rounds with it and without it")
    args = options.parse_args(argv)
    diarizer = load_diarizer("embedded", device="cpu")
    if args.window_check_cost:
        recordings = {name: decode(recording(name)[0]) for name in args.files}
        cost = window_check_cost(diarizer, recordings, args.window_check_cost)
        print(f"window check: {cost['ratio']}x the diarizer's CPU time without it", flush=True)
        out = args.out if "--out" in argv else args.out.with_name("window_check_cost.json")
        save("diarization", out, {"diarizer": "embedded, default settings and threads",
                                       "diarizer_threads": diarizer.threads, "files": args.files,
                                       "window_check_cost": cost}, argv)
        return 0
    rows = {}
    for name in args.files:
        path, rttm = recording(name)
        samples = decode(path)
        started = time.process_time()
        found = diarizer.diarize(samples)
        cpu_s = time.process_time() - started
        rows[name] = {"file": shown(path), "tuned_on": FILES[name][1], "duration_s": round(len(samples) / 16000, 1),
                      **scored(rttm, found.exclusive, len(samples) / 16000), "cpu_s": round(cpu_s, 1)}
        print(name, json.dumps(rows[name]), flush=True)
    save("diarization", args.out, {
        "diarizer": "embedded, default settings and threads; exclusive turns",
        "metrics": "DER (%) at pyannote.metrics collars 0 and 0.25, overlap scored; parts as % of scored speech "
                   "(collar 0); cpu_s: process CPU seconds of the diarization",
        "diarizer_threads": diarizer.threads,
        "files": rows,
    }, argv)
    return 0
