"""Item 5: the diarization share of a request, CPU time and peak memory per stage at growing lengths
(one fresh process per length), and the speaker merge alone at growing word counts.

Parts run only when named: ``diarization_merge`` (the merge alone), ``diarization_share`` (the
diarizer's CPU over the ASR at the long lengths; defaults beside one thread) and
``diarization_alongside`` (the diarization alongside the ASR against after it)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import backends, inputs
from support.measure import loadavg, timed, timed_cpu

ROOT = Path(__file__).resolve().parents[2]


def _segments_from_response(response: dict):
    """The response's words (with their times) back into Segments, as the handler hands them to the merge."""
    from whisper_endpoint.core.types import Segment, SpeakerTurn, Word

    words = [Word(w["timestamp"][0], w["timestamp"][1], w["text"]) for run in response["speakers"] for w in run["words"]]
    turns = [SpeakerTurn(t["start"], t["end"], t["speaker"]) for t in response["speaker_turns"]]
    return [Segment(words[0].start, words[-1].end, "".join(w.text for w in words), tuple(words))], turns


def synthetic(words: int):
    """``words`` words of 0.3 s with 0.05 s gaps, two speakers taking turns every 12 words."""
    from whisper_endpoint.core.types import Segment, SpeakerTurn, Word

    made = [Word(i * 0.35, i * 0.35 + 0.3, f" w{i}{'.' if i % 12 == 11 else ''}") for i in range(words)]
    turns = [SpeakerTurn(start * 0.35, min(start + 12, words) * 0.35, f"SPEAKER_0{(start // 12) % 2}")
             for start in range(0, words, 12)]
    segments = [Segment(made[i].start, made[min(i + 11, words - 1)].end, "".join(w.text for w in made[i:i + 12]),
                        tuple(made[i:i + 12])) for i in range(0, words, 12)]
    return segments, turns


def merge_scaling(sizes, repeats: int = 3) -> dict:
    """Median merge time per size, as it runs, and with Python's cyclic garbage collector paused:
    the collector's full passes walk every live object, so they grow with the number of words
    alive, not with the merge's own work."""
    import gc

    from whisper_endpoint.speakers.merge import merge_speakers

    def median_s(segments, turns) -> float:
        runs = []
        for _ in range(repeats):  # CPU time: pure Python on one thread, robust to the other jobs
            started = time.process_time()
            merge_speakers(segments, turns, with_words=True)
            runs.append(time.process_time() - started)
        return statistics.median(runs)

    rows = {}
    for words in sizes:
        segments, turns = synthetic(words)
        with_gc = median_s(segments, turns)
        gc.disable()
        try:
            without_gc = median_s(segments, turns)
        finally:
            gc.enable()
        rows[str(words)] = {"median_s": round(with_gc, 4), "us_per_word": round(1e6 * with_gc / words, 2),
                            "median_s_gc_paused": round(without_gc, 4),
                            "us_per_word_gc_paused": round(1e6 * without_gc / words, 2)}
    per_word = [row["us_per_word_gc_paused"] for row in rows.values()]
    return {"sizes": rows, "per_word_spread_gc_paused": round(max(per_word) / min(per_word), 2)}


def run_merge(plan) -> dict:
    """The merge scaling alone (``--items diarization_merge``)."""
    return {"merge_scaling": merge_scaling(plan.merge_words)}


def one(plan, seconds: float, threads: int = 1, alongside: bool = False) -> dict:
    """In a fresh process: ASR alone, then a diarized request, with CPU time and peak memory per stage.

    Both requests go through the handler's public call after a diarized warm-up on a short clip (so
    lazily loaded models are not counted). The peak is the diarized request's own (VmHWM reset after
    the ASR-alone run): resident models and the input included. ``threads``: the ASR's and the
    diarizer's (the parent sets OMP_NUM_THREADS to match); 0: the defaults a user starts with.
    ``alongside``: the diarization on its own thread during the ASR at any length, as the handler runs
    audio up to DIARIZATION_ALONGSIDE_S (speakers/alongside.py): then the request's wall, CPU and peak
    only, no stages (a stage's CPU time is the process's, which the other stage running at once would
    fill); else after the ASR, as longer audio, per stage."""
    from support.measure import rss_mib
    from bench.stages import StageClock, watch_handler
    from whisper_endpoint.speakers.merge import merge_speakers

    audio = inputs.long_audio(plan, seconds)
    inputs.samples.cache_clear()  # keep only this length's array, as a server would
    # threads 0: DIARIZATION_THREADS from the environment, as the handler reads it (unset: the default)
    handler = backends.handler(plan.model, diarization_model="embedded", cpu_threads=threads,
                               diarization_alongside_s=len(audio) / inputs.RATE if alongside else 0,
                               **({"diarization_threads": threads} if threads else {}))
    language = plan.language
    backends.ask(handler, inputs.clip(plan.short_clip), language=language, return_speaker_turns=True)  # warm-up
    loaded = rss_mib()
    asr_s, asr_cpu, _ = timed_cpu(lambda: backends.ask(handler, audio, language=language, diarize=False))
    clock = StageClock()
    if not alongside:
        watch_handler(clock, handler)
    clock.start()
    total_s, total_cpu, response = timed_cpu(lambda: backends.ask(
        handler, audio, language=language, return_speaker_turns=True, return_speaker_words=True))
    peak = clock.request_peak()
    segments, turns = _segments_from_response(response)
    merge_s, _ = timed(lambda: merge_speakers(segments, turns, with_words=True, duration=len(audio) / 16000))
    stages = clock.report()
    diarization_cpu = stages["cpu_s"].get("diarization")
    return {
        "audio_s": inputs.seconds_of(audio),
        "threads": threads,
        "alongside": alongside,
        "real_time_factor": round(total_s / (len(audio) / inputs.RATE), 4),  # the diarized request, wall
        "loadavg": loadavg(),
        "asr_alone_s": round(asr_s, 2),
        "asr_with_diarization_s": round(total_s, 2),
        "asr_alone_cpu_s": round(asr_cpu, 2),
        "asr_with_diarization_cpu_s": round(total_cpu, 2),
        "merge_alone_s": round(merge_s, 4),
        "words": sum(len(seg.words) for seg in segments),
        "turns": len(turns),
        "speakers": sorted({turn.speaker for turn in turns}),
        # diarization + merge + the word timestamps the merge needs, as a share of the whole request
        "diarization_share": round((total_cpu - asr_cpu) / total_cpu, 3),  # on CPU time
        "diarization_share_wall": round((total_s - asr_s) / total_s, 3),
        # the diarizer's own CPU time over the diarized request's, and over the ASR alone
        "diarizer_share": None if alongside else round(diarization_cpu / total_cpu, 3),
        "diarizer_over_asr": None if alongside else round(diarization_cpu / asr_cpu, 3),
        "rss_after_load_mib": loaded,
        "peak_rss_mib": peak,
        "stages": stages,
    }


# The smoke run's children by (seconds, threads, alongside): there item 5's parts repeat runs item 5 has
# made (same tiny input), and timings mean nothing, so each distinct run is made once per process.
_QUICK_RUNS: dict[tuple, dict] = {}


def _child(plan, seconds: float, threads: int = 1, alongside: bool = False) -> dict:
    """``one`` in a fresh process; threads 0: without the thread variables, as a user starts it."""
    key = (seconds, threads, alongside)
    if plan.quick and key in _QUICK_RUNS:
        return _QUICK_RUNS[key]
    env = {name: value for name, value in os.environ.items()
           if name not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CPU_THREADS", "DIARIZATION_THREADS")}
    if threads:
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    completed = subprocess.run(
        [sys.executable, "-m", "bench.items.diarization", "quick" if plan.quick else "full", str(seconds),
         str(threads), "alongside" if alongside else "after"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"diarization child for {seconds} s failed: {completed.stderr[-2000:]}")
    row = json.loads(completed.stdout.strip().splitlines()[-1])
    if plan.quick:
        _QUICK_RUNS[key] = row
    return row


def run(plan) -> dict:
    """Each length in a fresh process (its peak memory is its own), one thread, the diarization after
    the ASR (per stage); then the whole long input as the handler runs it (the diarization alongside
    the ASR) at the default threads beside one thread, interleaved, twice each (once in the quick run):
    a diarizer slower on the defaults than on one thread shows here, and users start on the defaults."""
    rows = [_child(plan, seconds) for seconds in plan.diarization_lengths_s]
    headline = next(row for row in rows if row["audio_s"] == round(plan.diarization_s, 1))
    runs = [_child(plan, plan.diarization_threads_s, threads=threads, alongside=True)
            for threads in (0, 1) * (1 if plan.quick else 2)]
    return {**headline, "lengths": rows, "threads": threads_summary(runs), "merge_scaling": merge_scaling(plan.merge_words)}


def threads_summary(runs: list[dict]) -> dict:
    """Per thread setting that ran (0: defaults): each run's plain and diarized request, wall and CPU s, and
    the medians' ratios (diarized / plain; defaults / one thread, when both ran)."""
    by = {threads: [row for row in runs if row["threads"] == threads] for threads in (0, 1)}
    by = {threads: rows for threads, rows in by.items() if rows}

    def median(threads: int, key: str) -> float:
        return statistics.median(row[key] for row in by[threads])

    keys = ("asr_alone_s", "asr_with_diarization_s", "asr_alone_cpu_s", "asr_with_diarization_cpu_s")
    summary = {("defaults" if threads == 0 else "one_thread"): {
        "runs": [{key: row.get(key) for key in (*keys, "alongside", "peak_rss_mib", "loadavg")} for row in rows],
        "diarized_over_plain_wall": round(median(threads, "asr_with_diarization_s") / median(threads, "asr_alone_s"), 2),
        "diarized_over_plain_cpu": round(median(threads, "asr_with_diarization_cpu_s") / median(threads, "asr_alone_cpu_s"), 2),
    } for threads, rows in by.items()}
    summary["audio_s"] = runs[0]["audio_s"]
    if len(by) == 2:
        summary["defaults_over_one_thread_diarized_wall"] = round(
            median(0, "asr_with_diarization_s") / median(1, "asr_with_diarization_s"), 2)
    return summary


SHARE_KEYS = ("audio_s", "threads", "asr_alone_s", "asr_with_diarization_s", "asr_alone_cpu_s",
              "asr_with_diarization_cpu_s", "diarizer_over_asr", "peak_rss_mib", "loadavg")


def run_share(plan) -> dict:
    """``--items diarization_share``: the diarizer's CPU time over the ASR it labels at each length (one
    thread, the diarization after the ASR, per stage), then a diarized request's wall over a plain one's
    at the defaults beside one thread (after the ASR), alternated; each run a fresh process."""
    sizes = plan.diarizer_share
    lengths = []
    for seconds in sizes.lengths_s:
        row = _child(plan, seconds)
        stages = row["stages"]["cpu_s"]
        lengths.append({key: row[key] for key in SHARE_KEYS} | {"diarizer_cpu_s": stages.get("diarization"),
                                                                "stages_cpu_s": stages})
    runs = [_child(plan, sizes.threads_s, threads=threads) for threads in (0, 1) * sizes.pairs]
    return {"cores": len(os.sched_getaffinity(0)), "one_thread": lengths,
            "threads": threads_summary(runs) if runs else None}


def run_alongside(plan) -> dict:
    """``--items diarization_alongside``: a diarized request with its diarization alongside the ASR (the
    default up to DIARIZATION_ALONGSIDE_S) and after it, at the defaults and on one thread, each beside a
    plain request in the same fresh process (``one``), alternated; whether both found the same speakers,
    turns and words at each thread setting (the ASR's own thread count may move a word)."""
    sizes = plan.alongside
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for _ in range(sizes.pairs):
        for alongside in (True, False):
            for threads in sizes.threads:
                runs[alongside].append(_child(plan, sizes.seconds, threads=threads, alongside=alongside))

    def found(row: dict) -> tuple:
        return tuple(row["speakers"]), row["turns"], row["words"]

    same = {("defaults" if threads == 0 else "one_thread"):
            len({found(row) for row in runs[True] + runs[False] if row["threads"] == threads}) == 1
            for threads in sizes.threads}
    return {"cores": len(os.sched_getaffinity(0)), "alongside": threads_summary(runs[True]),
            "after": threads_summary(runs[False]), "same_speakers_turns_and_words": same}


if __name__ == "__main__":
    from bench.plan import by_name

    print(json.dumps(one(by_name(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1,
                         len(sys.argv) > 4 and sys.argv[4] == "alongside")))
