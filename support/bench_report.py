"""The results as markdown tables (for docs/benchmarks.md and the README), from the JSON alone."""

from __future__ import annotations

from pathlib import Path

BEGIN, END = "<!-- bench:results begin -->", "<!-- bench:results end -->"


def _ok(results: dict, name: str) -> dict | None:
    entry = results.get("items", {}).get(name)
    return entry if entry and entry.get("status") == "ok" else None


def _overhead(entry: dict) -> list[str]:
    rows = ["| backend | audio | handler CPU s | raw CPU s | handler / raw (CPU) | handler / raw (wall) "
            "| same text (WER between them) |", "|---|---|---|---|---|---|---|"]
    for backend, raw in (("ctranslate2", "raw_faster_whisper"), ("transformers", "raw_pipeline")):
        for label, data in entry.get(backend, {}).items():
            variants = data["variants"]
            ratio = f"{data['ratio_handler_over_raw']:.3f}"
            eager = data.get("ratio_handler_over_eager", data.get("ratio_handler_over_raw_eager"))
            if eager is not None:
                ratio += f" ({eager:.3f} vs eager attention)"
            if "ratio_handler_no_recovery_over_raw" in data:
                ratio += f" ({data['ratio_handler_no_recovery_over_raw']:.3f} without the second pass)"
            if "ratio_handler_over_chunked" in data:
                ratio += f" ({data['ratio_handler_over_chunked']:.3f} vs the chunked pipeline, batch 24)"
            cpu = [variants[v].get("median_cpu_s", "-") for v in ("handler", raw)]
            wall = data.get("ratio_handler_over_raw_wall")
            if wall is None:  # results from before CPU time was recorded: the ratio is on wall time
                ratio, wall = "-", ratio
            rows.append(f"| {backend} | {label}, {data['audio_s']} s {data.get('language', '')} | {cpu[0]} | "
                        f"{cpu[1]} | {ratio} | {wall} | {'yes' if data['same_text'] else 'no'} "
                        f"({data.get('handler_vs_raw_wer', '-')}%) |")
    return rows


def _relative(title: str, block: dict) -> list[str]:
    rows = []
    for name, data in block.items():
        if isinstance(data, dict) and "median_s" in data:
            rows.append(f"| {title} | {name} | {data['median_s']} | {data.get('median_cpu_s', '-')} | "
                        f"{data['relative']:.2f} |")
    return rows


def _precision(entry: dict) -> list[str]:
    rows = [f"Short clip {entry['short_clip_s']} s (median of {entry['repeats']}); long: "
            f"{entry['sequential_vs_batched']['audio_s']} s of the long file. Relative = CPU time over the "
            "group's first variant.", "",
            "| group | variant | wall s | CPU s | relative |", "|---|---|---|---|---|"]
    rows += _relative("backend / precision", entry["precision"])
    rows += _relative("beam size", entry["beam_size"])
    rows += _relative("timestamps", entry["timestamps"])
    rows += _relative("long audio", entry["sequential_vs_batched"])
    return rows


def _speculative(entry: dict) -> list[str]:
    plain = sum(row.get("plain_cpu_s", row["plain_s"]) for row in entry["clips"])
    assisted = sum(row.get("assisted_cpu_s", row["assisted_s"]) for row in entry["clips"])
    rows = ["| pair | clips | plain CPU s | assisted CPU s | speed-up | identical text |", "|---|---|---|---|---|---|",
            f"| {entry['pair']} | {len(entry['clips'])} | {plain:.2f} | {assisted:.2f} | "
            f"{entry['speed_up_plain_over_assisted']:.2f}x | {entry['identical_text']} |",
            "", f"Real small + base pair: {entry['real_small_base_pair']}."]
    check = entry.get("segment_timestamps_check")
    if check:
        declined = check.get("assisted_ran") is False  # absent in results from before the handler declined
        note = f"the handler declined assistance ({'; '.join(check.get('warnings', []))}); " if declined else ""
        outcome = ("identical." if check["identical_text"] else
                   f"DIFFERS: plain \"{check['plain']}\", assisted \"{check['assisted']}\".")
        rows += ["", f"With segment timestamps ({check['clip']}): {note}the assisted request's text is {outcome}"]
    return rows


def _batching(entry: dict) -> list[str]:
    sizes = list(entry["times"])
    rows = [f"{entry['audio_s']} s of the long file; {entry['windows_note']}.", "",
            "| " + " | ".join(s.replace("_", " ") for s in sizes) + " |", "|" + "---|" * len(sizes),
            "| " + " | ".join(f"{entry['times'][s]} s" for s in sizes) + " |"]
    if "cpu_times" in entry:
        rows[-3] = "| time | " + rows[-3][2:]
        rows[-2] = "|---" + rows[-2]
        rows[-1] = "| wall | " + rows[-1][2:]
        rows.append("| CPU | " + " | ".join(f"{entry['cpu_times'][s]} s" for s in sizes) + " |")
    return rows


def _diarization(entry: dict) -> list[str]:
    merge = entry["merge_scaling"]["sizes"]
    cpu = ""
    if "asr_alone_cpu_s" in entry:
        cpu = f" (CPU {entry['asr_alone_cpu_s']} / {entry['asr_with_diarization_cpu_s']})"
    rows = ["| audio | ASR alone s | ASR + diarization + merge s | diarization share | merge alone (real words) |",
            "|---|---|---|---|---|",
            f"| {entry['audio_s']} s | {entry['asr_alone_s']} | {entry['asr_with_diarization_s']}{cpu} | "
            f"{100 * entry['diarization_share']:.0f}% | {entry['merge_alone_s']} s for {entry['words']} words |"]
    if "lengths" in entry:
        rows += ["", *_diarization_stages(entry)]
    rows += ["", "| merge, words | " + " | ".join(merge) + " |", "|---|" + "---|" * len(merge),
             "| s | " + " | ".join(str(v["median_s"]) for v in merge.values()) + " |",
             "| µs per word | " + " | ".join(str(v["us_per_word"]) for v in merge.values()) + " |"]
    if all("us_per_word_gc_paused" in v for v in merge.values()):
        rows.append("| µs per word, garbage collector paused | "
                    + " | ".join(str(v["us_per_word_gc_paused"]) for v in merge.values()) + " |")
    return rows


# (column, stage path in bench/stages.py's report); "other": speaker counting, clustering, reconstruction
_STAGES = (("segmentation", "diarization/segmentation"), ("embeddings", "diarization/embeddings"),
           ("clustering etc.", "diarization/other"), ("speech fill", "diarization/speech_fill"),
           ("turn check", "diarization/turn_check"))


def _diarization_stages(entry: dict) -> list[str]:
    """CPU seconds per stage of one diarized request (one thread), and its peak memory."""
    rows = ["Per stage, one diarized request per length in a fresh process, one thread (CPU s):", "",
            "| audio | ASR alone | ASR (words) | " + " | ".join(name for name, _ in _STAGES)
            + " | diarizer | diarizer / ASR alone | diarizer share | RSS after load MiB | peak RSS MiB |",
            "|---" * (8 + len(_STAGES)) + "|"]
    for row in entry["lengths"]:
        cpu = row["stages"]["cpu_s"]
        rows.append(f"| {row['audio_s'] / 60:.1f} min | {row['asr_alone_cpu_s']} | {cpu.get('asr', '-')} | "
                    + " | ".join(str(cpu.get(path, "-")) for _, path in _STAGES)
                    + f" | {cpu.get('diarization', '-')} | {row['diarizer_over_asr']} | "
                    f"{100 * row['diarizer_share']:.0f}% | {row['rss_after_load_mib']} | {row['peak_rss_mib']} |")
    threads = entry.get("threads")
    if threads:
        rows += ["", f"{threads['audio_s'] / 60:.1f} min, plain and diarized, at the default threads and at one "
                     "(each run a fresh process, interleaved):", "", *_threads({"": threads})]
    return rows


def _threads(summaries: dict[str, dict]) -> list[str]:
    """``threads_summary``s (bench/items/diarization.py) by row label prefix as one table, a row a run,
    then the defaults' ratio to one thread where both ran."""
    rows = ["| threads | plain s (CPU s) | diarized s (CPU s) | load average | diarized / plain, wall | CPU |",
            "|---|---|---|---|---|---|"]
    for prefix, summary in summaries.items():
        for name in ("defaults", "one_thread"):
            for run in summary.get(name, {}).get("runs", []):
                rows.append(f"| {prefix}{name.replace('_', ' ')} | {run['asr_alone_s']} ({run['asr_alone_cpu_s']}) | "
                            f"{run['asr_with_diarization_s']} ({run['asr_with_diarization_cpu_s']}) | "
                            f"{run['loadavg'][0]} | {summary[name]['diarized_over_plain_wall']} | "
                            f"{summary[name]['diarized_over_plain_cpu']} |")
    for prefix, summary in summaries.items():
        if "defaults_over_one_thread_diarized_wall" in summary:
            rows += ["", f"Diarized request{' ' + prefix.rstrip(', ') if prefix else ''}, defaults over one thread "
                         f"(wall, medians): {summary['defaults_over_one_thread_diarized_wall']}."]
    return rows


def _diarizer_share(entry: dict) -> list[str]:
    rows = ["One thread, the diarization after the ASR, each length a fresh process:", "",
            "| audio | ASR alone CPU s | diarizer CPU s | diarizer / ASR alone | peak RSS MiB |", "|---|---|---|---|---|"]
    rows += [f"| {row['audio_s'] / 60:.1f} min | {row['asr_alone_cpu_s']} | {row['diarizer_cpu_s']} | "
             f"{row['diarizer_over_asr']} | {row['peak_rss_mib']} |" for row in entry["one_thread"]]
    if entry.get("threads"):
        rows += ["", f"{entry['threads']['audio_s'] / 60:.1f} min, after the ASR:", "", *_threads({"": entry["threads"]})]
    return rows


def _alongside(entry: dict) -> list[str]:
    audio = entry["alongside"]["audio_s"]
    same = ", ".join(f"{name.replace('_', ' ')}: {'yes' if found else 'NO'}"
                     for name, found in entry["same_speakers_turns_and_words"].items())
    return [f"{audio / 60:.1f} min, the diarization alongside the ASR and after it, each run a fresh process:", "",
            *_threads({"alongside, ": entry["alongside"], "after, ": entry["after"]}), "",
            f"Same speakers, turns and words alongside and after: {same}."]


def _batch(entry: dict) -> list[str]:
    rows = [f"{entry['model']} over {', '.join(entry['inputs'])} (under audio/):", "",
            "| mode | files (failed) | audio min | decoding s | command s | audio min / wall min, decoding | command |",
            "|---|---|---|---|---|---|---|"]
    return rows + [f"| {run['mode']} | {run['files']} ({run['failed']}) | {run['audio_minutes']} | {run['decode_wall_s']} | "
                   f"{run['command_wall_s']} | {run['audio_min_per_wall_min_decoding']} | "
                   f"{run['audio_min_per_wall_min_command']} |" for run in entry["runs"]]


def _job_queue(entry: dict) -> list[str]:
    rows = ["| store | jobs | ms per job, median | p95 |", "|---|---|---|---|"]
    rows += [f"| {name} | {row['jobs']} | {row['median_ms']} | {row['p95_ms']} |"
             for name, row in entry["store_overhead"].items()]
    if entry["throughput"]:
        rows += ["", f"{entry['model']}, {entry['clip']}, one thread a server, one PostgreSQL queue:", "",
                 "| servers | jobs | s | jobs / minute | load average |", "|---|---|---|---|---|"]
        rows += [f"| {row['servers']} | {row['jobs']} | {row['seconds']} | {row['jobs_per_minute']} | "
                 f"{row['load_average']} |" for row in entry["throughput"]]
    return rows


def _models(entry: dict) -> list[str]:
    rows = [f"ASR_MODELS={entry['models']}, one thread, {entry['clip']}:", "",
            "| model | first request s | warm s | RSS before MiB | loaded | after unload | held | given back |",
            "|---|---|---|---|---|---|---|---|"]
    rows += [f"| {row['model']} | {row['first_request_s']} | {row['warm_request_s']} | {row['rss_before_mib']} | "
             f"{row['rss_loaded_mib']} | {row['rss_after_unload_mib']} | {row['held_mib']} | {row['given_back_mib']} |"
             for row in entry["rows"]]
    swaps = entry["rss_after_each_unload"]
    return rows + ["", f"RSS after each further unload of {swaps['model']}: {', '.join(map(str, swaps['mib']))} MiB."]


def _request_cost(entry: dict) -> list[str]:
    rows = [f"Encoder windows, {entry['windows'][0]['audio_s']} s of test clips ({entry['windows_model']}):", "",
            "| chunk_length_s | bounded: windows (budget) | CPU s | WER | unbounded: windows | CPU s | WER |",
            "|---|---|---|---|---|---|---|"]
    bounded = {row["chunk_length_s"]: row for row in entry["windows"] if row["bounded"]}
    for row in (row for row in entry["windows"] if not row["bounded"]):
        mine = bounded[row["chunk_length_s"]]
        rows.append(f"| {row['chunk_length_s']} | {mine['encoder_windows']} ({mine['window_budget']}) | {mine['cpu_s']} | "
                    f"{mine['wer']} | {row['encoder_windows']} | {row['cpu_s']} | {row['wer']} |")
    *batches, growth = entry["batch_memory"]
    return rows + ["", f"One encoder call ({entry['batch_model']}), peak MiB above the loaded model: "
                   + ", ".join(f"{row['windows']} windows {row['peak_above_mib']}" for row in batches)
                   + f"; {growth['mib_per_window']} MiB per window."]


def _scaling(entry: dict) -> list[str]:
    rows = ["| audio | wall s | CPU s | x real time (wall) | RSS after load MiB | peak RSS MiB |",
            "|---|---|---|---|---|---|"]
    for row in entry["lengths"]:
        rows.append(f"| {row['audio_s'] / 60:.1f} min | {row['time_s']} | {row.get('cpu_s', '-')} | "
                    f"{row['real_time_factor']:.3f} | "
                    f"{row['rss_after_load_mib']} | {row['peak_rss_mib']} |")
    return rows


def _serving(entry: dict) -> list[str]:
    rows = [f"{entry['model']}, {entry['clip']} ({entry['clip_s']} s) posted as the body of `/predict`, "
            f"MAX_CONCURRENCY={entry['max_concurrency']}; failed requests: {entry['failed_requests']}.", "",
            "| concurrency | requests | ok | errors | p50 s | p95 s | throughput req/s | server CPU s / request "
            "| server RSS MiB (end) |", "|---|---|---|---|---|---|---|---|---|"]
    for level in [entry["latency_one_at_a_time"]] + entry["load"]:
        rss = [v for k, v in level.items() if k.startswith("rss_mib_after_")]
        rows.append(f"| {level['concurrency']} | {level['requests']} | {level['ok']} | "
                    f"{sum(level['errors'].values())} | {level['latency_s']['p50']} | {level['latency_s']['p95']} | "
                    f"{level['throughput_rps']} | {level.get('server_cpu_s_per_request', '-')} | {rss[-1] if rss else '-'} |")
    return rows


def _concurrency(entry: dict) -> list[str]:
    rows = [f"{entry['model']}, {entry['clip']} ({entry['clip_s']} s), {entry['requests_at_once']} requests at once "
            f"per round, median of {entry['repeats']} rounds; failed requests: {entry['failed_requests']}.", "",
            "| MAX_CONCURRENCY | threads per decode | requests / wall-minute | requests / CPU-minute "
            "| server CPU s / request | RSS after load MiB | after first use MiB | peak MiB |",
            "|---|---|---|---|---|---|---|---|"]
    for variant in entry["variants"].values():
        rows.append(f"| {variant['max_concurrency']} | {variant['cpu_threads']} | {variant['per_wall_minute']} | "
                    f"{variant['per_cpu_minute']} | {variant['cpu_s_per_request']} | {variant['rss_after_load_mib']} | "
                    f"{variant['rss_after_first_use_mib']} | {variant['peak_rss_mib']} |")
    growth = [f"{step} workers: {values['rss_after_load_mib']} MiB after load, {values['rss_after_first_use_mib']} MiB "
              "once every worker has decoded" for step, values in entry["rss_per_extra_worker_mib"].items()]
    rows += ["", "RSS per extra worker (one thread each), " + "; ".join(growth) + "."]
    return rows


SECTIONS = (
    ("overhead", "1. Handler overhead (same audio, settings and weights; greedy, segment timestamps)", _overhead),
    ("precision", "2. Backends, precision, batching, beam size, timestamps (CPU)", _precision),
    ("speculative", "3. Speculative decoding", _speculative),
    ("batching", "4. Batch size, chunked long audio (ctranslate2, int8)", _batching),
    ("diarization", "5. Diarization share and the speaker merge", _diarization),
    ("diarization_share", "5a. The diarizer's CPU over the ASR at the long lengths", _diarizer_share),
    ("diarization_alongside", "5b. Diarization alongside the ASR against after it", _alongside),
    ("scaling", "6. Scaling with audio length (ctranslate2, int8, one process per length)", _scaling),
    ("serving", "7. Short-request latency and load test (server on loopback)", _serving),
    ("concurrency", "9. Requests at once: MAX_CONCURRENCY 1 vs 2 (server on loopback)", _concurrency),
    ("job_queue", "10. The job queue: store overhead per job, jobs per minute through one and two servers", _job_queue),
    ("models", "11. Several models in one server: cold and warm first request, memory held and given back", _models),
    ("batch", "12. The batch command, one process against Ray", _batch),
    ("request_cost", "13. A request's cost: encoder windows and batch memory", _request_cost),
)
# Run only when named (bench/__main__.py EXTRA_ITEMS): left out of the table until they have run.
OPTIONAL = {"diarization_share", "diarization_alongside", "batch", "request_cost"}


def _overhead_entry(results: dict, entry: dict | None) -> dict | None:
    """Item 1 with each figure from its latest run (re-runs of a part: overhead_short, overhead_ctranslate2, overhead_transformers)."""
    merged = parts(results)
    if merged is None:
        return entry
    runs = [e for n, e in results["items"].items() if n.startswith("overhead") and e.get("status") == "ok"]
    return {**max(runs, key=lambda e: e.get("finished_at", 0)), **merged}


def table(results: dict) -> str:
    env = results.get("environment", {})
    lines = [f"Model {env.get('model')}, {env.get('cpus')} CPUs, one thread per backend, torch {env.get('torch')}, "
             f"transformers {env.get('transformers')}, faster-whisper {env.get('faster_whisper')}."]
    for name, title, render in SECTIONS:
        entry = results.get("items", {}).get(name)
        if name == "overhead":
            entry = _overhead_entry(results, entry)
        again = results.get("items", {}).get("diarization_merge")
        if (name == "diarization" and entry and again and again.get("status") == "ok"
                and again.get("finished_at", 0) > entry.get("finished_at", 0)):
            entry = {**entry, "merge_scaling": again["merge_scaling"]}  # a later merge-only run
        if entry is None and name in OPTIONAL:
            continue
        lines += ["", f"#### {title}", ""]
        if entry is None:
            lines.append("not run")
        elif entry.get("status") != "ok":
            lines.append(f"failed: `{entry.get('error', '').strip().splitlines()[-1]}`")
        else:
            lines += render(entry)
            lines += ["", f"(load average before / after: {entry['loadavg_before'][0]} / {entry['loadavg_after'][0]};"
                          f" item wall time {entry['wall_s']} s)"]
    return "\n".join(lines)


def write(results: dict, doc: Path) -> None:
    """Replace the results block of the doc (or create a doc holding only that block)."""
    block = f"{BEGIN}\n{table(results)}\n{END}"
    text = doc.read_text() if doc.exists() else ""
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = (text + "\n\n" if text else "") + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def parts(results: dict) -> dict | None:
    """Item 1 as {backend: {length: figures}}, each figure from the latest run that measured it
    (``overhead``, then ``overhead_short`` / ``overhead_ctranslate2`` / ``overhead_transformers`` re-runs,
    by finishing time)."""
    items = results.get("items", {})
    runs = [items[name] for name in ("overhead", "overhead_short", "overhead_ctranslate2", "overhead_transformers")
            if items.get(name, {}).get("status") == "ok"]
    merged: dict = {}
    for entry in sorted(runs, key=lambda e: e.get("finished_at", 0)):
        for backend in ("ctranslate2", "transformers"):
            merged.setdefault(backend, {}).update(entry.get(backend, {}))
    return {k: v for k, v in merged.items() if v} or None
