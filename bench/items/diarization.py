"""Item 5: the diarization share of a request, and the speaker merge alone at growing word counts."""

from __future__ import annotations

import statistics
import time

from bench import backends, inputs
from bench.measure import timed, timed_cpu


def _segments_from_response(response: dict):
    """The response's words (with their times) back into Segments, as the handler hands them to the merge."""
    from whisper_endpoint.results import Segment, SpeakerTurn, Word

    words = [Word(w["timestamp"][0], w["timestamp"][1], w["text"]) for run in response["speakers"] for w in run["words"]]
    turns = [SpeakerTurn(t["start"], t["end"], t["speaker"]) for t in response["speaker_turns"]]
    return [Segment(words[0].start, words[-1].end, "".join(w.text for w in words), tuple(words))], turns


def synthetic(words: int):
    """``words`` words of 0.3 s with 0.05 s gaps, two speakers taking turns every 12 words."""
    from whisper_endpoint.results import Segment, SpeakerTurn, Word

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

    from whisper_endpoint.speaker_merge import merge_speakers

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


def run(plan) -> dict:
    from whisper_endpoint.speaker_merge import merge_speakers

    handler = backends.handler(plan.model, diarization_model="embedded")
    audio = inputs.long_audio(plan, plan.diarization_s)
    language = plan.language
    backends.ask(handler, inputs.clip(plan.short_clip), language=plan.language, diarize=False)  # warm-up
    asr_s, asr_cpu, _ = timed_cpu(lambda: backends.ask(handler, audio, language=language, diarize=False))
    total_s, total_cpu, response = timed_cpu(lambda: backends.ask(
        handler, audio, language=language, return_speaker_turns=True, return_speaker_words=True))
    segments, turns = _segments_from_response(response)
    merge_s, _ = timed(lambda: merge_speakers(segments, turns, with_words=True, duration=len(audio) / 16000))
    return {
        "audio_s": inputs.seconds_of(audio),
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
        "merge_scaling": merge_scaling(plan.merge_words),
    }
