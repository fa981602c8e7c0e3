"""One PNG with a panel per measured item, drawn from the results JSON alone."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def _ok(results: dict, name: str):
    entry = results.get("items", {}).get(name)
    return entry if entry and entry.get("status") == "ok" else None


def _missing(ax, title: str) -> None:
    ax.set_title(title, fontsize=9)
    ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    ax.set_axis_off()


def _overhead(ax, entry) -> None:
    labels, ratios = [], []
    for backend in ("ctranslate2", "transformers"):
        for label, data in entry.get(backend, {}).items():
            labels.append(f"{'CT2' if backend == 'ctranslate2' else 'HF'} {label}\n{data['audio_s']:.0f} s")
            ratios.append(data["ratio_handler_over_raw"])
    ax.bar(labels, ratios, color="#4c72b0")
    ax.axhline(1.05, color="red", linestyle="--", linewidth=1, label="+5%")
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.set_ylabel("handler time / raw backend")
    ax.set_title("1. Handler overhead", fontsize=9)
    ax.legend(fontsize=7)
    ax.tick_params(axis="x", labelsize=7)


def _precision(ax, entry) -> None:
    groups = [("precision", entry["precision"]), ("beam", entry["beam_size"]), ("timestamps", entry["timestamps"])]
    labels, values = [], []
    for _, block in groups:
        for name, data in block.items():
            labels.append(name.replace("ctranslate2_", "CT2 ").replace("transformers_", "HF ")
                          .replace("timestamps_", "ts ").replace("_", " "))
            values.append(data["relative"])
    ax.barh(labels, values, color="#55a868")
    ax.axvline(1.0, color="black", linewidth=0.5)
    ax.set_xlabel("time relative to the group's first variant")
    ax.set_title(f"2. Precision, beam, timestamps ({entry['short_clip_s']} s clip)", fontsize=9)
    ax.tick_params(axis="y", labelsize=7)


def _batching(ax, entry) -> None:
    sizes = [int(name.split("_")[1]) for name in entry["times"]]
    ax.plot(sizes, list(entry["times"].values()), marker="o", linestyle="--", label="wall")
    if "cpu_times" in entry:
        ax.plot(sizes, list(entry["cpu_times"].values()), marker="o", label="CPU")
    ax.legend(fontsize=7)
    ax.set_xlabel("batch size")
    ax.set_ylabel("seconds")
    ax.set_title(f"4. Batch size ({entry['audio_s']:.0f} s of long audio)", fontsize=9)
    ax.set_ylim(bottom=0)


def _scaling(ax, entry) -> None:
    minutes = [row["audio_s"] / 60 for row in entry["lengths"]]
    ax.plot(minutes, [row["time_s"] for row in entry["lengths"]], marker="o", color="#4c72b0", linestyle="--",
            label="wall")
    if all("cpu_s" in row for row in entry["lengths"]):
        ax.plot(minutes, [row["cpu_s"] for row in entry["lengths"]], marker="o", color="#4c72b0", label="CPU")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_xlabel("audio minutes")
    ax.set_ylabel("seconds", color="#4c72b0")
    ax.set_ylim(bottom=0)
    twin = ax.twinx()
    twin.plot(minutes, [row["peak_rss_mib"] for row in entry["lengths"]], marker="s", color="#c44e52")
    twin.set_ylabel("peak RSS MiB", color="#c44e52")
    twin.set_ylim(bottom=0)
    ax.set_title("6. Scaling with audio length", fontsize=9)


def _serving(ax, entry) -> None:
    levels = entry["load"]
    conc = [level["concurrency"] for level in levels]
    ax.plot(conc, [level["latency_s"]["p50"] for level in levels], marker="o", label="p50")
    ax.plot(conc, [level["latency_s"]["p95"] for level in levels], marker="o", label="p95")
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("latency s (queue included)")
    ax.set_title(f"7. Load test ({entry['clip_s']:.0f} s clip, {entry['failed_requests']} failed)", fontsize=9)
    ax.legend(fontsize=7)
    ax.set_ylim(bottom=0)


def _memory(ax, entry) -> None:
    samples = entry["rss_over_time"]
    ax.plot([t for t, _ in samples], [v for _, v in samples])
    ax.set_xlabel("seconds into the serving item")
    ax.set_ylabel("server RSS MiB")
    ax.set_ylim(bottom=0)
    ax.set_title("7. Server memory over time", fontsize=9)


def _diarization(ax, entry) -> None:
    cpu = "asr_alone_cpu_s" in entry
    asr = entry["asr_alone_cpu_s" if cpu else "asr_alone_s"]
    rest = entry["asr_with_diarization_cpu_s" if cpu else "asr_with_diarization_s"] - asr
    ax.bar(["ASR alone", "ASR + diarization"], [asr, asr], color="#4c72b0", label="ASR")
    stages = entry.get("stages", {}).get("cpu_s", {})
    parts = [("segmentation", "diarization/segmentation", "#dd8452"),
             ("embeddings", "diarization/embeddings", "#55a868")]
    bottom = asr
    for label, path, color in parts if cpu and all(path in stages for _, path, _ in parts) else ():
        ax.bar(["ASR + diarization"], [stages[path]], bottom=[bottom], color=color, label=label)
        bottom, rest = bottom + stages[path], rest - stages[path]
    ax.bar(["ASR + diarization"], [rest], bottom=[bottom], color="#c44e52" if bottom > asr else "#dd8452",
           label="rest: words, clustering, fill, merge" if bottom > asr else "diarization, words, merge")
    ax.set_ylabel("CPU seconds" if cpu else "seconds")
    ax.set_title(f"5. Diarization share {100 * entry['diarization_share']:.0f}% ({entry['audio_s'] / 60:.1f} min)",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper left")


def _merge(ax, entry) -> None:
    sizes = entry["merge_scaling"]["sizes"]
    words = [int(n) for n in sizes]
    ax.loglog(words, [row["median_s"] for row in sizes.values()], marker="o", label="measured")
    if all("median_s_gc_paused" in row for row in sizes.values()):
        ax.loglog(words, [row["median_s_gc_paused"] for row in sizes.values()], marker="s",
                  label="garbage collector paused")
    first = next(iter(sizes.values()))["median_s"] / words[0]
    ax.loglog(words, [first * n for n in words], linestyle="--", color="grey", label="linear")
    ax.set_xlabel("words")
    ax.set_ylabel("merge seconds")
    ax.set_title("5. Speaker merge alone", fontsize=9)
    ax.legend(fontsize=7)


PANELS = (("overhead", _overhead), ("precision", _precision), ("batching", _batching),
          ("diarization", _diarization), ("scaling", _scaling), ("serving", _serving), ("serving", _memory),
          ("diarization", _merge))


def digest(results: dict) -> str:
    """What the plot is drawn from: the results and this module's code. draw() stores it in the PNG, so
    a check can tell a stale plot without redrawing (pixels differ between FreeType builds)."""
    drawn = {key: value for key, value in results.items() if key != "produced_by"}  # not drawn: provenance
    data = json.dumps(drawn, sort_keys=True).encode() + Path(__file__).read_bytes()
    return hashlib.sha256(data).hexdigest()


def draw(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    flat = axes.ravel()
    for ax, (name, panel) in zip(flat, PANELS):
        entry = _ok(results, name)
        if name == "overhead":
            from support.bench_report import parts

            entry = parts(results)
        again = _ok(results, "diarization_merge")
        if name == "diarization" and entry and again and again.get("finished_at", 0) > entry.get("finished_at", 0):
            entry = {**entry, "merge_scaling": again["merge_scaling"]}
        if entry is None:
            _missing(ax, name)
        else:
            panel(ax, entry)
    for ax in flat[len(PANELS):]:
        ax.set_axis_off()
    env = results.get("environment", {})
    fig.suptitle(f"whisper-endpoint benchmarks: {env.get('model')}, {env.get('cpus')} CPU cores, one thread per backend"
                 + (" (quick smoke run)" if env.get("quick") else ""), fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    # No timestamp or version in the file: the same results give the same metadata.
    fig.savefig(path, dpi=90, metadata={"Software": None, "Source digest": digest(results)})
    plt.close(fig)
