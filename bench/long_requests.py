"""``python -m bench.long_requests [--minutes 15 60 120 240] [--plain] [--block-seconds S] [--several]``: one
request of a long recording at the defaults (embedded models, 2 cores, raw FLAC body): peak resident memory,
time, WER, and for a diarized one the speakers found and DER (issue 62).

The recordings are bench/long_memory.py's: audio/long/fillets_long.flac (13.4 min, two voices) repeated
with growing gaps, cut at each length; written once as FLAC to ``--cache`` (encoded a copy at a time, so
no process holds a whole recording's samples). ``--several`` cycles three recordings of the same two voices
instead, 1 s apart (fillets_long and the dialogues fillets_barrel and fillets_cave; issue 69's soak), and
records the warnings about windows that lost their word times or were decoded again after an error. Each request runs in a fresh process: the models loaded,
the body read, the peak (VmHWM) reset, then the request. ``--block-seconds 0`` measures the recording
decoded whole (no blocks). WER is over the whole recording against the reference turns, repeated.
Writes results/long_requests.json (key: ``{plain|diarized}/{blocks|whole}[/several]/{minutes}``).
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

from bench.long_memory import GAP_GROWTH_S, GAP_S, LONG, RATE

ROOT = Path(__file__).resolve().parents[1]
SEVERAL = [LONG, ROOT / "audio" / "dialogues" / "fillets_barrel", ROOT / "audio" / "dialogues" / "fillets_cave"]
SEVERAL_GAP_S = 1.0
# The warnings of a window whose word times or decoding failed (asr/long_form/window_fallback.py, cost.py).
WINDOW_WARNINGS = ("timed from their segment's span", "after an error", "was not transcribed")


def recording(minutes: float, folder: Path, several: bool = False) -> Path:
    """The FLAC of ``minutes`` (made once) and its reference beside it (.rttm and .txt)."""
    import av
    import numpy as np

    from support.audio import decode_reference

    path = folder / f"long_{'several_' if several else ''}{minutes:g}.flac"
    if path.exists():
        return path
    sources = [(decode_reference(s.with_suffix(".flac")), json.loads(s.with_suffix(".json").read_text())["turns"])
               for s in (SEVERAL if several else [LONG])]
    total, at, copy, lines, words = round(minutes * 60 * RATE), 0, 0, [], []
    partial = path.with_suffix(".part")
    with av.open(str(partial), mode="w", format="flac") as out:
        stream = out.add_stream("flac", rate=RATE, layout="mono")
        while at < total:
            once, turns = sources[copy % len(sources)]
            offset = at / RATE
            for turn in turns:
                if offset + turn["end"] <= minutes * 60:  # only whole turns are scored
                    lines.append(f"SPEAKER long 1 {offset + turn['start']:.3f} {turn['end'] - turn['start']:.3f} "
                                 f"<NA> <NA> {turn['speaker']} <NA> <NA>")
                    words.append(turn["text"])
            gap_s = SEVERAL_GAP_S if several else GAP_S + copy * GAP_GROWTH_S
            piece = np.concatenate([once, np.zeros(round(gap_s * RATE), dtype=np.float32)])[: total - at]
            frame = av.AudioFrame.from_ndarray((piece * 32767).astype(np.int16)[None], format="s16", layout="mono")
            frame.sample_rate = RATE
            for packet in stream.encode(frame):
                out.mux(packet)
            at += len(piece)
            copy += 1
        for packet in stream.encode(None):
            out.mux(packet)
    path.with_suffix(".rttm").write_text("\n".join(lines) + "\n")
    path.with_suffix(".txt").write_text(" ".join(words))
    partial.rename(path)
    return path


def child(path: Path, diarize: bool, block_seconds: float | None) -> dict:
    """One request in this process: what the report records."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from support.measure import peak_rss_mib, reset_peak_rss, rss_mib
    from support.metrics import annotation, der, read_rttm, wer
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    settings = {"diarization_model": "embedded"} if diarize else {}
    if block_seconds is not None:
        settings["block_seconds"] = block_seconds
    handler = EndpointHandler(settings=ModelSettings(**settings))
    loaded = rss_mib()
    body = path.read_bytes()
    reset_peak_rss()
    wall, cpu = time.perf_counter(), time.process_time()
    out = handler({"inputs": body, "parameters": {"diarize": diarize, "return_speaker_turns": diarize}})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = peak_rss_mib()
    minutes = out["duration"] / 60
    measured = {
        "minutes": round(minutes, 2), "rss_loaded_mib": loaded, "body_mib": round(len(body) / 2**20, 1),
        "peak_rss_mib": peak, "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
        "cpu_s_per_audio_min": round(cpu / minutes, 2), "blocks": out["decoding"].get("blocks", 1),
        "wer": round(100 * wer([path.with_suffix(".txt").read_text()], [out["text"]]), 2),
        "window_warnings": [w for w in out["warnings"] if any(kind in w for kind in WINDOW_WARNINGS)],
    }
    if diarize:
        turns = [_Turn(t["start"], t["end"], t["speaker"]) for t in out["speaker_turns"]]
        scores = der(read_rttm(path.with_suffix(".rttm")), annotation(turns), out["duration"])
        measured |= {"speakers_found": len({t.speaker for t in turns}), "speakers_true": 2,
                     **{k: v for k, v in scores.items() if k.startswith("der")}}
    return measured


class _Turn:
    def __init__(self, start, end, speaker):
        self.start, self.end, self.speaker = start, end, speaker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[15, 60, 120, 240])
    parser.add_argument("--plain", action="store_true", help="without diarization")
    parser.add_argument("--block-seconds", type=float, help="BLOCK_SECONDS (0: whole); default: the setting's")
    parser.add_argument("--several", action="store_true", help="three recordings of the two voices, cycled")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "long_requests"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(ROOT / "results" / "long_requests.json"))
    args = parser.parse_args()
    if args.child is not None:
        Path(args.out).write_text(json.dumps(child(Path(args.child), not args.plain, args.block_seconds)))
        return
    from support.results import (
        write,  # run as ``python -m bench.long_requests`` from the repository
    )

    command = "python -m bench.long_requests " + " ".join(sys.argv[1:])
    out, cache = Path(args.out), Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    results = json.loads(out.read_text()) if out.exists() else {}
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    kind = "plain" if args.plain else "diarized"
    mode = "whole" if args.block_seconds == 0 else "blocks"
    if args.several:
        mode += "/several"
    for minutes in args.minutes:
        path = recording(minutes, cache, args.several)
        with tempfile.NamedTemporaryFile(suffix=".json") as report:
            extra = [] if args.block_seconds is None else ["--block-seconds", str(args.block_seconds)]
            subprocess.run([sys.executable, "-m", "bench.long_requests", "--child", str(path), "--out", report.name,
                            *(["--plain"] if args.plain else []), *extra],
                           cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=True)
            measured = json.loads(Path(report.name).read_text())
        measured |= {"command": command, "commit": head.strip()}
        print(kind, mode, json.dumps(measured), flush=True)
        results[f"{kind}/{mode}/{minutes:g}"] = measured
        write(out, results, command)


if __name__ == "__main__":
    main()
