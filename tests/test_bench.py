"""Smoke test of the benchmark harness: every item runs end to end on seconds of audio with tiny.en.

No timing is asserted (timings belong in the benchmark results); what is checked is that each item
ran, measured what it claims, and that the results file, the plot and the table come out of it.
The tiny inputs keep the long-audio paths running (over 30 s) on a few seconds of speech.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.paths import ROOT

ITEMS = {"overhead", "serving", "precision", "speculative", "batching", "scaling", "diarization", "concurrency",
         "diarization_share", "diarization_alongside", "batch", "job_queue", "models", "request_cost"}
# Two processes at once, one per core (timings mean nothing here; the GPU script's CPU run goes
# alongside), then --merge joins their results: the run fits the smoke test's minute, and the merge
# used for split runs is exercised too.
# Balanced on each item's time alone (one thread, seconds): diarization 38 (three child processes),
# overhead 25, precision 17, speculative 13, concurrency 13, serving 10, scaling 8, batching 7; and, alone
# on a machine at load 4-6: request_cost 11 (three children), models 10 (one), batch 7 (the command once,
# no Ray), job_queue 3 (the store alone, no servers). diarization_share and diarization_alongside run
# after diarization in its process and reuse its runs (the same tiny input): they add nothing.
GROUPS = (("diarization", "diarization_share", "diarization_alongside", "speculative", "scaling", "batching",
           "job_queue", "batch"),
          ("overhead", "precision", "serving", "concurrency", "models", "request_cost"))


GPU_SCRIPT = ["bench/gpu_transformers.py", "--size", "tiny", "--device", "cpu", "--batch-sizes", "1", "2",
              "--decode-tokens", "4", "--repeats", "1"]


@dataclass
class QuickRun:
    parts: list[tuple[int, Path]]  # (exit status, log) of each split run
    merged: subprocess.CompletedProcess
    out: Path
    gpu_script: tuple[int, Path, Path]  # (exit status, stdout, stderr) of the GPU script on CPU


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    bench = [sys.executable, "-m", "bench", "--quick"]
    logs = [out / f"part{index}.log" for index in range(len(GROUPS))]
    gpu_out, gpu_err = out / "gpu.json", out / "gpu.log"
    with contextlib.ExitStack() as files:
        runs = [subprocess.Popen([*bench, "--items", *group, "--out-dir", str(out / f"part{index}")], cwd=ROOT,
                                 env=env, stdout=subprocess.DEVNULL, stderr=files.enter_context(logs[index].open("w")))
                for index, group in enumerate(GROUPS)]
        gpu = subprocess.Popen([sys.executable, *GPU_SCRIPT], cwd=ROOT, env=env,
                               stdout=files.enter_context(gpu_out.open("w")), stderr=files.enter_context(gpu_err.open("w")))
        parts = [(run.wait(timeout=900), log) for run, log in zip(runs, logs)]
        gpu_status = gpu.wait(timeout=300)
    merged = subprocess.run([*bench, "--merge", *(str(out / f"part{i}" / "benchmarks.json") for i in range(len(GROUPS))),
                             "--out-dir", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return QuickRun(parts, merged, out, (gpu_status, gpu_out, gpu_err))


def test_every_item_runs_and_reports(quick_run):
    for status, log in quick_run.parts:
        assert status == 0, log.read_text()[-3000:]
    results = json.loads((quick_run.out / "benchmarks.json").read_text())
    failed = {name: entry.get("error") for name, entry in results["items"].items() if entry["status"] != "ok"}
    assert not failed, failed
    assert quick_run.merged.returncode == 0, quick_run.merged.stderr[-3000:]
    assert set(results["items"]) == ITEMS
    assert results["environment"]["model"] == "embedded:tiny.en"
    for entry in results["items"].values():
        assert len(entry["loadavg_before"]) == 3 and len(entry["loadavg_after"]) == 3


def test_results_say_what_made_them(quick_run):
    """Each results file names its command and commit (support/results.py); each item its own source."""
    merged = json.loads((quick_run.out / "benchmarks.json").read_text())
    assert merged["produced_by"]["command"].startswith("python -m bench --quick --merge ")
    for index, group in enumerate(GROUPS):
        part = json.loads((quick_run.out / f"part{index}" / "benchmarks.json").read_text())
        assert part["produced_by"]["command"] == f"python -m bench --quick --items {' '.join(group)} " \
                                                 f"--out-dir {quick_run.out / f'part{index}'}"
        assert len(part["produced_by"]["commit"]) == 40 and part["environment"]["torch"]
    assert all(len(entry["source"]["commit"]) == 40 for entry in merged["items"].values())


def test_overhead_compares_handler_with_each_raw_backend(quick_run):
    results = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]["overhead"]
    for backend, raw in (("ctranslate2", "raw_faster_whisper"), ("transformers", "raw_pipeline")):
        for label in ("short", "long"):
            data = results[backend][label]
            variants = data["variants"]
            for variant in variants.values():
                _check_timed(variant, data["repeats"])
            # The ratios are the variants' own medians divided (CPU time, and wall time).
            assert data["ratio_handler_over_raw"] == _ratio(variants["handler"], variants[raw], "median_cpu_s")
            assert data["ratio_handler_over_raw_wall"] == _ratio(variants["handler"], variants[raw], "median_s")
            assert data["text_chars"]["handler"] > 0  # the handler transcribed something
    long = results["ctranslate2"]["long"]
    assert long["audio_s"] > 30  # past one window: the batched path ran
    assert long["ratio_handler_no_recovery_over_raw"] == _ratio(
        long["variants"]["handler_no_recovery"], long["variants"]["raw_faster_whisper"], "median_cpu_s")


def _check_timed(variant: dict, repeats: int) -> None:
    """A variant's medians are those of its runs, one run a repeat, and no run used more CPU time than
    its wall time on every core (CPU time is this process's, over all its threads)."""
    assert len(variant["runs_s"]) == len(variant["cpu_runs_s"]) == repeats
    assert variant["median_s"] == pytest.approx(statistics.median(variant["runs_s"]), abs=0.001)
    assert variant["median_cpu_s"] == pytest.approx(statistics.median(variant["cpu_runs_s"]), abs=0.001)
    assert all(cpu <= wall * os.cpu_count() + 0.01 for wall, cpu in zip(variant["runs_s"], variant["cpu_runs_s"]))


def _ratio(mine: dict, theirs: dict, key: str) -> float:
    return round(mine[key] / theirs[key], 3)


def test_load_test_answers_every_request(quick_run):
    serving = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]["serving"]
    assert serving["failed_requests"] == 0
    for level in serving["load"]:
        assert level["ok"] == level["requests"]
    assert serving["rss_over_time"] and all(mib > 0 for _, mib in serving["rss_over_time"])


def test_other_items_measure_what_they_claim(quick_run):
    items = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]
    assert set(items["precision"]["precision"]) == {"ctranslate2_int8", "ctranslate2_float32", "transformers_float32"}
    assert set(items["precision"]["beam_size"]) == {"beam_1", "beam_2", "beam_5"}
    assert all(row["assisted_reported"] for row in items["speculative"]["clips"])
    assert items["speculative"]["identical_text"] == "1/1"  # lossless without timestamps
    segment_check = items["speculative"]["segment_timestamps_check"]  # assistance declined with timestamps
    assert segment_check["identical_text"] and segment_check["assisted_ran"] is False and segment_check["warnings"]
    assert set(items["batching"]["times"]) == {"batch_1", "batch_4"}
    assert all(row["peak_rss_mib"] > row["rss_after_load_mib"] > 0 for row in items["scaling"]["lengths"])
    diarization = items["diarization"]
    assert diarization["words"] > 0 and diarization["turns"] > 0
    assert diarization["asr_with_diarization_cpu_s"] > diarization["asr_alone_cpu_s"]  # wall time is noise here
    assert set(diarization["merge_scaling"]["sizes"]) == {"200", "2000"}
    stages = diarization["lengths"][0]["stages"]["cpu_s"]  # each stage of the diarizer was timed
    assert {"asr", "diarization", "diarization/segmentation", "diarization/embeddings"} <= set(stages)
    assert 0 < stages["diarization/segmentation"] + stages["diarization/embeddings"] <= stages["diarization"]
    assert diarization["lengths"][0]["peak_rss_mib"] >= diarization["lengths"][0]["rss_after_load_mib"] > 0
    threads = diarization["threads"]  # the defaults beside one thread (one run each in the quick run)
    assert [len(threads[name]["runs"]) for name in ("defaults", "one_thread")] == [1, 1]
    [defaults], [one] = threads["defaults"]["runs"], threads["one_thread"]["runs"]
    assert threads["defaults_over_one_thread_diarized_wall"] == pytest.approx(
        defaults["asr_with_diarization_s"] / one["asr_with_diarization_s"], abs=0.006)
    assert threads["defaults"]["diarized_over_plain_wall"] == pytest.approx(
        defaults["asr_with_diarization_s"] / defaults["asr_alone_s"], abs=0.006)


def test_concurrency_item_serves_one_and_two_at_once(quick_run):
    entry = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]["concurrency"]
    assert entry["failed_requests"] == 0
    assert {(v["max_concurrency"], v["cpu_threads"]) for v in entry["variants"].values()} == {(1, 1), (2, 1)}
    for variant in entry["variants"].values():
        # Requests a minute are the rounds' own counts over their times (the medians of the rounds).
        rounds, count = variant["rounds"], entry["requests_at_once"]
        for measured in rounds:
            assert measured["per_wall_minute"] == pytest.approx(60 * count / measured["wall_s"], rel=0.03)
            assert measured["per_cpu_minute"] == pytest.approx(60 * count / measured["cpu_s"], rel=0.03)
        assert variant["per_wall_minute"] == statistics.median(r["per_wall_minute"] for r in rounds)
        assert variant["per_cpu_minute"] == statistics.median(r["per_cpu_minute"] for r in rounds)
        assert len(rounds) == entry["repeats"]
        assert variant["peak_rss_mib"] >= variant["rss_after_first_use_mib"] > 0
    assert set(entry["rss_per_extra_worker_mib"]) == {"1->2"}


def test_item_5s_parts_report_the_diarizer_share_and_alongside_against_after(quick_run):
    items = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]
    share = items["diarization_share"]
    [row] = share["one_thread"]  # the diarizer's CPU time over the ASR alone's, from the stages' clock
    assert row["threads"] == 1 and row["diarizer_cpu_s"] == row["stages_cpu_s"]["diarization"] > 0
    assert row["diarizer_over_asr"] == pytest.approx(row["diarizer_cpu_s"] / row["asr_alone_cpu_s"], rel=0.05)
    assert share["threads"] is None  # no defaults / one-thread pairs in the quick run
    along = items["diarization_alongside"]
    assert [run["alongside"] for run in along["alongside"]["one_thread"]["runs"]] == [True]
    assert [run["alongside"] for run in along["after"]["one_thread"]["runs"]] == [False]
    assert set(along["same_speakers_turns_and_words"]) == {"one_thread"}


def test_serving_lab_items_measure_what_they_claim(quick_run):
    items = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]
    [single] = items["batch"]["runs"]  # one process, one thread; Ray only in the full run
    assert (single["mode"], single["files"], single["done"], single["failed"]) == ("single-1t", 1, 1, 0)
    assert 0 < single["decode_wall_s"] < single["command_wall_s"]  # the command's own clock starts after loading
    queue = items["job_queue"]  # the store alone; the servers only in the full run
    assert set(queue["store_overhead"]) == {"sqlite", "postgresql"} and queue["throughput"] == []
    assert all(0 < row["median_ms"] <= row["p95_ms"] for row in queue["store_overhead"].values())
    [model] = items["models"]["rows"]  # the second model: loaded by its first request, then unloaded
    assert model["model"] == "tiny32" and model["first_request_s"] > 0 and model["warm_request_s"] > 0
    assert model["held_mib"] == pytest.approx(model["rss_loaded_mib"] - model["rss_before_mib"], abs=0.11)
    assert len(items["models"]["rss_after_each_unload"]["mib"]) == 1


def test_request_cost_counts_windows_with_and_without_the_bound(quick_run):
    cost = json.loads((quick_run.out / "benchmarks.json").read_text())["items"]["request_cost"]
    windows = {(row["bounded"], row["chunk_length_s"]): row for row in cost["windows"]}
    assert set(windows) == {(True, 1), (False, 1)}  # chunk_length_s 1 on one clip, with and without the bound
    assert windows[True, 1]["encoder_windows"] <= windows[True, 1]["window_budget"]
    assert windows[False, 1]["encoder_windows"] > windows[True, 1]["encoder_windows"]  # 1 s windows, unbounded
    *batches, growth = cost["batch_memory"]
    assert [row["windows"] for row in batches] == [1, 2]
    assert growth["mib_per_window"] == pytest.approx(batches[1]["peak_above_mib"] - batches[0]["peak_above_mib"], abs=0.11)


def test_plot_and_table_come_from_the_results(quick_run):
    out = quick_run.out
    assert (out / "benchmarks.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "benchmarks.md").read_text()
    assert "<!-- bench:results begin -->" in table and "not run" not in table and "failed:" not in table
    overhead = json.loads((out / "benchmarks.json").read_text())["items"]["overhead"]
    assert f"{overhead['ctranslate2']['short']['ratio_handler_over_raw']:.3f}" in table


def test_gpu_script_runs_at_a_tiny_size_on_cpu(quick_run):
    status, stdout, stderr = quick_run.gpu_script
    assert status == 0, stderr.read_text()[-2000:]
    result = json.loads(stdout.read_text())
    assert [row["batch_size"] for row in result["rows"]] == [1, 2]
    assert result["measured_on"].startswith("cpu") and result["decode_tokens"] == 4
    for row in result["rows"]:  # batch x tokens over the decode's time
        assert row["tokens_per_s"] == pytest.approx(row["batch_size"] * 4 / row["decode_s"], rel=0.02)
