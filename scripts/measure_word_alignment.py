"""Word timestamps before and after the window-by-window alignment (backends/alignment.py), in one run.

In one process per thread setting, the CTranslate2 backend on the plan's long file cut to each length:
a plain transcription (``return_timestamps: "segment"``), word timestamps with faster-whisper's own
alignment (one ``Whisper.align`` call per batch: before) and with ours (one call per window: after),
round-robin with the order rotated each round, after a warm-up at that length. Process CPU time of each
transcription and of its ``Whisper.align`` calls; the two word transcripts must be equal (text, times,
words, probabilities) but for the segments sampled at a fallback temperature, which differ run to run. One thread (``CPU_THREADS=1``, ``OMP_NUM_THREADS=1``), then the defaults (no thread
variables), each in a fresh process. Writes results/word_alignment.json.

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_word_alignment [--lengths 300 804] [--defaults 300]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "word_alignment.json"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CPU_THREADS")


def child(lengths: list[float], threads: int, rounds: int) -> dict:
    from faster_whisper import WhisperModel

    from bench import backends, inputs
    from bench.measure import loadavg
    from bench.plan import by_name
    from scripts.profile_word_timestamps import TimedWhisper
    from whisper_endpoint.core.config import InferenceConfig

    plan = by_name("full")
    asr = backends.handler(plan.model, cpu_threads=threads).asr
    clock: dict[str, float] = {}
    asr.model.model = TimedWhisper(asr.model.model, clock)
    batched = functools.partial(WhisperModel.find_alignment, asr.model)  # faster-whisper's own, one call per batch

    def run(audio, variant: str):
        options = InferenceConfig(language=plan.language, return_timestamps="segment" if variant == "segment" else "word",
                                  batch_size=24)
        if variant == "word_batched":
            asr.model.find_alignment = batched
        clock.clear()
        started = time.process_time()
        try:
            transcript = asr.transcribe(audio, options)
        finally:
            vars(asr.model).pop("find_alignment", None)
        return time.process_time() - started, clock.get("align", 0.0), transcript

    rows = []
    variants = ["segment", "word_batched", "word_windows"]
    for seconds in lengths:
        audio = inputs.long_audio(plan, seconds)
        run(audio, "word_windows")  # warm-up at this length: the first run's allocations are not counted
        cpu = {name: [] for name in variants}
        align = {name: [] for name in variants}
        transcripts = {}
        for round_ in range(rounds):
            shift = round_ % len(variants)
            for name in variants[shift:] + variants[:shift]:
                spent, aligning, transcripts[name] = run(audio, name)
                cpu[name].append(round(spent, 3))
                align[name].append(round(aligning, 3))

        def median(values):
            return round(statistics.median(values), 3)

        row = {"audio_s": inputs.seconds_of(audio), "loadavg": loadavg(), "cpu_s_runs": cpu, "align_cpu_s_runs": align,
               **{f"{name}_cpu_s": median(cpu[name]) for name in variants},
               **{f"{name}_align_cpu_s": median(align[name]) for name in variants[1:]},
               "words": sum(len(s.words or ()) for s in transcripts["word_windows"].segments),
               **_compared(transcripts["word_batched"].segments, transcripts["word_windows"].segments)}
        row["word_over_segment_before"] = round(row["word_batched_cpu_s"] / row["segment_cpu_s"], 3)
        row["word_over_segment_after"] = round(row["word_windows_cpu_s"] / row["segment_cpu_s"], 3)
        row["align_after_over_before"] = round(row["word_windows_align_cpu_s"] / row["word_batched_align_cpu_s"], 3)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return {"threads": threads or "defaults", "lengths": rows}


def _compared(before, after) -> dict:
    """Whether the two word transcripts are equal, leaving out the segments decoded by sampling: a window's
    remainder whose temperature fallback reached a temperature above 0 (backends' ``_decode_alone``) is
    sampled anew on every run, with either alignment."""
    pairs = list(zip(before, after))  # a sampled remainder may also give another number of segments
    deterministic = [(b, a) for b, a in pairs if b.temperature == a.temperature == 0]
    return {"word_transcripts_identical": before == after, "segments": [len(before), len(after)],
            "sampled_segments": sum(1 for b, a in pairs if b.temperature or a.temperature),
            "identical_but_sampled": len(before) == len(after) and all(b == a for b, a in deterministic)}


def _in_fresh_process(lengths: list[float], threads: int, rounds: int) -> dict:
    env = {name: value for name, value in os.environ.items() if name not in THREAD_VARIABLES}
    if threads:
        env |= {name: str(threads) for name in THREAD_VARIABLES}
    completed = subprocess.run(
        [sys.executable, "-m", "scripts.measure_word_alignment", "--child", str(threads), "--rounds", str(rounds),
         "--lengths", *map(str, lengths)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=float, nargs="*", default=[300.0, 804.0], help="one thread")
    parser.add_argument("--defaults", type=float, nargs="*", default=[300.0], help="the defaults' lengths")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.lengths, args.child, args.rounds)))
        return
    runs = [_in_fresh_process(args.lengths, 1, args.rounds)]
    if args.defaults:
        runs.append(_in_fresh_process(args.defaults, 0, args.rounds))
    command = "HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.measure_word_alignment " + " ".join(sys.argv[1:])
    OUT.write_text(json.dumps({"command": command.strip(), "cores": len(os.sched_getaffinity(0)), "runs": runs},
                              indent=2) + "\n")


if __name__ == "__main__":
    main()
