"""What word timestamps add to the ASR, and where it goes, on one thread.

The CTranslate2 backend as a diarized request runs it (``return_timestamps: "word"``) against a plain
request (``"segment"``), both in one process, alternated, on the plan's long file cut to each length
(default: the first 5 min and the whole 13.4 min). Inside the word runs, faster-whisper's steps are
timed: ``add_word_timestamps`` (all of it), ``find_alignment`` within it, and CTranslate2's
``Whisper.align`` (the decoder re-run over the text tokens, the median filter and the DTW) within that;
the rest of ``find_alignment`` is its Python (word splitting, times); the rest of
``add_word_timestamps`` the punctuation merge and the boundary hacks. Process CPU time (CTranslate2
computes on its own thread). Writes results/word_timestamps_profile.json.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.profile_word_timestamps [SECONDS ...]
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "word_timestamps_profile.json"


class TimedWhisper:
    """CTranslate2's Whisper object with ``align`` timed; everything else passed through."""

    def __init__(self, inner, clock: dict):
        self._inner, self._clock = inner, clock

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def align(self, *args, **kwargs):
        started = time.process_time()
        try:
            return self._inner.align(*args, **kwargs)
        finally:
            self._clock["align"] = self._clock.get("align", 0.0) + time.process_time() - started


def _timed_method(owner, name: str, key: str, clock: dict) -> None:
    function = getattr(owner, name)

    def timed(*args, **kwargs):
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            clock[key] = clock.get(key, 0.0) + time.process_time() - started

    setattr(owner, name, timed)


def main() -> None:
    from bench import backends, inputs
    from bench.measure import loadavg
    from bench.plan import by_name
    from whisper_endpoint.core.config import InferenceConfig

    lengths = [float(s) for s in sys.argv[1:]] or [300.0, 804.0]
    plan = by_name("full")
    asr = backends.handler(plan.model, cpu_threads=int(os.environ.get("CPU_THREADS", "1"))).asr
    clock: dict[str, float] = {}
    asr.model.model = TimedWhisper(asr.model.model, clock)
    _timed_method(asr.model, "add_word_timestamps", "add_word_timestamps", clock)
    _timed_method(asr.model, "find_alignment", "find_alignment", clock)

    def run(audio, timestamps: str):
        options = InferenceConfig(language=plan.language, return_timestamps=timestamps, batch_size=24)
        clock.clear()
        started = time.process_time()
        transcript = asr.transcribe(audio, options)
        return time.process_time() - started, dict(clock), transcript

    run(inputs.clip(plan.short_clip), "word")  # warm-up
    rows = []
    for seconds in lengths:
        audio = inputs.long_audio(plan, seconds)
        runs = {"segment": [], "word": []}
        for order in (("segment", "word"), ("word", "segment")):
            for timestamps in order:
                cpu, steps, transcript = run(audio, timestamps)
                runs[timestamps].append({"cpu_s": round(cpu, 3), **{k: round(v, 3) for k, v in steps.items()}})
        profiler = cProfile.Profile()
        profiler.enable()
        _, _, transcript = run(audio, "word")
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)

        def median(variant, key):
            values = sorted(r.get(key, 0.0) for r in runs[variant])
            return round(sum(values) / len(values), 3)

        row = {
            "audio_s": inputs.seconds_of(audio), "loadavg": loadavg(), "runs": runs,
            "segment_cpu_s": median("segment", "cpu_s"), "word_cpu_s": median("word", "cpu_s"),
            "align_cpu_s": median("word", "align"), "find_alignment_cpu_s": median("word", "find_alignment"),
            "add_word_timestamps_cpu_s": median("word", "add_word_timestamps"),
            "segments": len(transcript.segments), "words": sum(len(s.words or ()) for s in transcript.segments),
            "cprofile_tottime_top": [line for line in text.getvalue().splitlines() if line.strip()][:30],
        }
        row["word_extra_cpu_s"] = round(row["word_cpu_s"] - row["segment_cpu_s"], 3)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "cprofile_tottime_top"}), flush=True)
        print("\n".join(row["cprofile_tottime_top"]), flush=True)
    command = "OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.profile_word_timestamps " + \
        " ".join(sys.argv[1:])
    OUT.write_text(json.dumps({"command": command.strip(), "cores": len(os.sched_getaffinity(0)),
                               "threads": os.environ.get("CPU_THREADS", "1"), "lengths": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
