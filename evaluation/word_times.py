"""How far word timestamps are off: the product's and raw faster-whisper's word times against exact ones.

    python -m evaluation word_times [--files tune|check|all] [--model embedded:base]
                                    [--backend ctranslate2|transformers] [--no-raw] [--cost-rounds N]

audio/word_times is flite speech (two diphone voices, three clustergen ones) whose every word's start
and end are known from the synthesiser's own phoneme times. Each file goes through the request path
(``return_timestamps: "word"``, English) and, unless ``--no-raw``, faster-whisper's own
``transcribe(word_timestamps=True)`` on the same model. Scored by support.word_timing: the mean signed
and absolute start and end errors, AAS, the shares of words with both edges within 50 and 100 ms,
and the WER; per voice, kind of voice, set (``tune`` files were tuned on, ``check`` files were not)
and pooled.

``--cost-rounds N`` (ctranslate2 only): the CPU seconds of the same word-timestamp requests with the
word onsets and the edges from the signal (issue 59) and without them (the DTW times as before), the
two interleaved file by file for N rounds, one thread; the ratio of the summed medians.
"""

from __future__ import annotations

import json
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from support.paths import AUDIO  # noqa: E402
from support.word_timing import score, summarise  # noqa: E402

SET = AUDIO / "word_times"
COSTED = ("kal_tune_1", "kal16_check_1", "slt_tune_2", "rms_check_2", "awb_tune_3", "slt_check_1")


def entries(which: str) -> list[dict]:
    files = json.loads((SET / "manifest.json").read_text())["files"]
    return [entry for entry in files if which == "all" or entry["set"] == which]


def product_words(handler, path) -> list[dict]:
    response = handler({"inputs": path.read_bytes(), "parameters": {"language": "en", "return_timestamps": "word"}})
    return [{"word": c["text"], "start": c["timestamp"][0], "end": c["timestamp"][1]} for c in response["chunks"]]


def raw_faster_whisper(model: str):
    from faster_whisper import WhisperModel

    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.weights.locate import locate_model

    whisper = WhisperModel(str(locate_model(model, cache_dir=ModelSettings().model_cache_dir).path),
                           device="cpu", compute_type="int8", cpu_threads=1)

    def words(path) -> list[dict]:
        segments, _ = whisper.transcribe(str(path), language="en", word_timestamps=True)
        return [{"word": w.word, "start": w.start, "end": w.end} for s in segments for w in s.words]
    return words


def run(words, files: list[dict]) -> dict:
    """Per file and per group: WER and the timing summary."""
    scored = []
    for entry in files:
        result = score(json.loads((SET / entry["truth"]).read_text())["words"], words(SET / entry["file"]))
        scored.append((entry, result))
        print(f"{entry['file']}: {summarise(result['pairs']).get('aas_ms')} ms AAS", flush=True)
    groups: dict[str, list[dict]] = {}
    for entry, result in scored:
        for key in (f"voice:{entry['voice']}", f"kind:{entry['kind']}", f"set:{entry['set']}", "pooled"):
            groups.setdefault(key, []).append(result)

    def row(results: list[dict]) -> dict:
        errors, reference = sum(r["errors"] for r in results), sum(r["ref_words"] for r in results)
        return {"files": len(results), "ref_words": reference, "wer": round(errors / reference, 4),
                **summarise([pair for r in results for pair in r["pairs"]])}
    return {"groups": {key: row(results) for key, results in groups.items()},
            "files": {entry["file"]: row([result]) for entry, result in scored}}


def cost(handler, rounds: int) -> dict:
    """CPU seconds of word-timestamp requests with and without the onsets and the signal's edges."""
    from whisper_endpoint.asr.word_times import word_edges

    model, snapped = handler.asr.model, word_edges.snapped
    onsets = model.onsets

    def use(new: bool) -> None:  # the backend reads both at each request
        model.onsets = onsets if new else None
        word_edges.snapped = snapped if new else (lambda segments, samples: segments)

    cpu: dict[str, dict[str, list[float]]] = {"dtw": {}, "onsets": {}}
    product_words(handler, SET / f"{COSTED[0]}.flac")  # warm-up
    try:
        for r in range(rounds):
            for i, name in enumerate(COSTED):
                for which in (("dtw", "onsets") if (r + i) % 2 == 0 else ("onsets", "dtw")):
                    use(which == "onsets")
                    started = time.process_time()
                    product_words(handler, SET / f"{name}.flac")
                    cpu[which].setdefault(name, []).append(round(time.process_time() - started, 3))
    finally:
        use(True)
    total = {which: sum(statistics.median(times) for times in per_file.values()) for which, per_file in cpu.items()}
    return {"files": list(COSTED), "rounds": rounds, "cpu_s": cpu,
            "ratio": round(total["onsets"] / total["dtw"], 3)}


def main(argv: list[str]) -> int:
    from evaluation import parser, save
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    choices = parser("word_times")
    choices.add_argument("--files", choices=("tune", "check", "all"), default="all")
    choices.add_argument("--model", default="embedded:base")
    choices.add_argument("--backend", choices=("ctranslate2", "transformers"), default="ctranslate2")
    choices.add_argument("--no-raw", action="store_true", help="leave out raw faster-whisper")
    choices.add_argument("--cost-rounds", type=int, default=0, help="measure the cost over N interleaved rounds")
    args = choices.parse_args(argv)

    handler = EndpointHandler(settings=ModelSettings(asr_model=args.model, asr_backend=args.backend, cpu_threads=1))
    files = entries(args.files)
    data = {"model": args.model, "backend": args.backend, "files": args.files,
            "product": run(lambda path: product_words(handler, path), files)}
    if not args.no_raw:
        data["raw_faster_whisper"] = run(raw_faster_whisper(args.model), files)
    if args.cost_rounds:
        data["cost"] = cost(handler, args.cost_rounds)
    save("word_times", args.out, data, argv)
    print("| words from | group | WER | AAS ms | start / end mean ms | both within 50 ms | within 100 ms |")
    print("|---|---|---|---|---|---|---|")
    for system in ("product", "raw_faster_whisper"):
        for key, m in data.get(system, {}).get("groups", {}).items():
            print(f"| {system} | {key} | {m['wer']:.1%} | {m['aas_ms']:.0f} | {m['start_mean_ms']:+.0f} / "
                  f"{m['end_mean_ms']:+.0f} | {m['within_50ms']:.0%} | {m['within_100ms']:.0%} |")
    if "cost" in data:
        print(f"cost of a word-timestamp request, onsets / DTW: {data['cost']['ratio']}x")
    return 0
