"""DER of the embedded diarization pipeline, from the first untuned assembly to the current defaults.

    .venv/bin/python -m scripts.evaluate_diarization [--out results/diarization_quality.json] [--threads 1]

Files: every dialogue in audio/dialogues, pyannote's own sample (inside the pyannote.audio
wheel) and the Japanese meeting in audio/ja, each with RTTM ground truth. DER as
pyannote.metrics computes it, with a 0.25 s collar, on the exclusive output (one speaker at a time,
what the word/speaker merge uses). Missed, false alarm and confusion are in seconds.

Variants that share a window step and an embedding method share their segmentation and embeddings
(computed once per file, as pyannote's own tuning cache does); ``cpu_s`` per file is that of the
first, uncached run. Rows from issue 19 on (the speed work) are also timed whole, with a fresh
pipeline, on the first 5 minutes of audio/long (``cpu_s_5min_excerpt``, CPU seconds; run
with --threads 1 as published). That file is not scored here: it is a held-out check
(scripts/evaluate_speaker_attribution.py), and the Japanese meeting was never tuned on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "audio"
COLLAR = 0.25

# What issue 19 changed is off in the rows before it: each (window, local speaker) pair embedded
# by CAM++ on its own, each turn of the turn check too.
PER_WINDOW = {"pooled_embeddings": False, "pooled_turns": False}
# (name, what changed, OfflineSpeakerDiarization options, clustering threshold, timed on 5 min)
VARIANTS = [
    ("first assembly", "offline-models.md's untuned assembly",
     {"segmentation_step": 0.25, "speech_fill": False, "turn_check": False, **PER_WINDOW}, 0.65, False),
    ("+ speech fill", "Silero VAD (threshold 0.2) speech given to the nearest speaker",
     {"segmentation_step": 0.25, "turn_check": False, **PER_WINDOW}, 0.65, False),
    ("threshold 0.6", "clustering threshold 0.6 (no change at this step)",
     {"segmentation_step": 0.25, "turn_check": False, **PER_WINDOW}, 0.6, False),
    ("step 0.1, no fill", "window step 0.1 alone",
     {"segmentation_step": 0.1, "speech_fill": False, "turn_check": False, **PER_WINDOW}, 0.6, False),
    ("step 0.1 + speech fill", "window step 0.1 + speech fill",
     {"segmentation_step": 0.1, "turn_check": False, **PER_WINDOW}, 0.6, False),
    ("+ turn check", "+ each turn of 1 s or more re-embedded alone, nearest centroid (turn_check.py); "
     "the default until issue 19", {"segmentation_step": 0.1, **PER_WINDOW}, 0.6, True),
    ("+ CAM++ once, pooled per window", "CAM++ over the whole input once (20 s tiles, 2 s context), "
     "each window's speaker = its frames pooled under the mask (pooled.py)",
     {"segmentation_step": 0.1, "pooled_turns": False}, 0.6, True),
    ("+ turn check pooled (default)", "the turn check pools the same frames instead of re-running CAM++",
     {"segmentation_step": 0.1}, 0.6, True),
    ("step 0.2 (not adopted)", "window step 0.2: half the segmentation", {"segmentation_step": 0.2}, 0.6, True),
    ("step 0.25 (not adopted)", "window step 0.25", {"segmentation_step": 0.25}, 0.6, True),
]
EXCERPT_S = 300  # CPU time is measured on the first 5 min of audio/long (bench item 5's excerpt)


def test_files() -> dict[str, tuple[Path, Path]]:
    import pyannote.audio

    sample = Path(pyannote.audio.__file__).parent / "sample"
    files = {"pyannote_sample": (sample / "sample.wav", sample / "sample.rttm")}
    for rttm in sorted((AUDIO / "dialogues").glob("*.rttm")) + sorted((AUDIO / "ja").glob("*.rttm")):
        files[rttm.stem] = (rttm.with_suffix(".flac"), rttm)
    return files


def shown(path: Path) -> str:
    """A path as it reads on any machine: inside the repository, or inside a package."""
    for base, prefix in ((Path(sys.prefix), "<venv>/"), (ROOT, "")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)


def read_rttm(path: Path):
    from pyannote.core import Annotation, Segment

    annotation = Annotation(uri=path.stem)
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            annotation[Segment(start, start + duration)] = fields[7]
    return annotation


def decode(path: Path):
    from whisper_endpoint.audio.decode import decode_file

    return decode_file(path.read_bytes(), max_seconds=4 * 3600).samples


class SharedFrontEnd:
    """Memoises a pipeline's segmentation and embeddings per file, so variants differing only in
    clustering or speech fill do not recompute them."""

    def __init__(self, pipeline):
        self.cache: dict[tuple[str, str], object] = {}
        segmentations, embeddings = pipeline.get_segmentations, pipeline.get_embeddings
        pipeline.get_segmentations = lambda file, hook=None: self._get(
            ("segmentation", file["uri"]), lambda: segmentations(file, hook=hook)
        )
        pipeline.get_embeddings = lambda file, binarized, exclude_overlap=False, hook=None: self._get(
            ("embeddings", file["uri"]),
            lambda: embeddings(file, binarized, exclude_overlap=exclude_overlap, hook=hook),
        )

    def _get(self, key, compute):
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


def score(reference, hypothesis, duration: float) -> dict:
    from pyannote.core import Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    whole = Timeline([Segment(0, duration)])
    detail = DiarizationErrorRate(collar=COLLAR)(reference, hypothesis, uem=whole, detailed=True)
    return {
        "der": round(100 * detail["diarization error rate"], 2),
        "missed": round(detail["missed detection"], 2),
        "false_alarm": round(detail["false alarm"], 2),
        "confusion": round(detail["confusion"], 2),
        "scored_speech": round(detail["total"], 2),
        "speakers_found": len(hypothesis.labels()),
        "speakers_true": len(reference.labels()),
    }


def evaluate(threads: int | None) -> dict:
    import torch

    from whisper_endpoint.diarization import pyannote_quietly

    if threads:
        torch.set_num_threads(threads)
    with pyannote_quietly():
        from whisper_endpoint.diarization.offline import OfflineSpeakerDiarization

        files = test_files()
    audio = {name: decode(path) for name, (path, _) in files.items()}
    references = {name: read_rttm(rttm) for name, (_, rttm) in files.items()}
    excerpt = decode(AUDIO / "long" / "fillets_long.flac")[: EXCERPT_S * 16000]
    pipelines: dict[tuple, OfflineSpeakerDiarization] = {}  # by front end: window step, embedding
    rows = []
    for name, change, options, threshold, timed in VARIANTS:
        front_end = (options["segmentation_step"], options.get("pooled_embeddings", True))
        first_run = front_end not in pipelines
        if first_run:
            pipelines[front_end] = OfflineSpeakerDiarization(**options)
            SharedFrontEnd(pipelines[front_end])
        pipeline = _configured(pipelines[front_end], options, threshold)
        per_file = {}
        for file, samples in audio.items():
            started = time.process_time()
            output = pipeline({"waveform": torch.from_numpy(samples)[None], "sample_rate": 16000, "uri": file})
            per_file[file] = score(references[file], output.exclusive_speaker_diarization, len(samples) / 16000)
            if first_run:
                per_file[file]["cpu_s"] = round(time.process_time() - started, 1)
        rows.append(_row(name, change, options, threshold, per_file))
        if timed:  # a fresh pipeline, so nothing is cached
            rows[-1]["cpu_s_5min_excerpt"] = cpu_seconds(_configured(OfflineSpeakerDiarization(**options), options,
                                                                    threshold), excerpt)
        print(markdown_row(rows[-1]), flush=True)
    return {
        "metric": f"DER (%), collar {COLLAR} s, exclusive output; missed/false_alarm/confusion in seconds; "
                  f"cpu_s_5min_excerpt: the pipeline's CPU seconds on the first {EXCERPT_S} s of the long file",
        "torch_threads": torch.get_num_threads(),
        "files": {name: shown(path) for name, (path, _) in files.items()},
        "variants": rows,
    }


def _configured(pipeline, options: dict, threshold: float):
    from whisper_endpoint.diarization.offline import _fill_options, _turn_check_option

    pipeline.instantiate({"clustering": {"threshold": threshold}})
    pipeline.speech_fill = _fill_options(options.get("speech_fill", True))
    pipeline.turn_check = _turn_check_option(options.get("turn_check", True))
    pipeline.pooled_turns = options.get("pooled_turns", True) and pipeline.tiling is not None
    return pipeline


def cpu_seconds(pipeline, samples) -> float:
    import torch

    started = time.process_time()
    pipeline({"waveform": torch.from_numpy(samples)[None], "sample_rate": 16000, "uri": "excerpt"})
    return round(time.process_time() - started, 1)


def _row(name: str, change: str, options: dict, threshold: float, per_file: dict) -> dict:
    import numpy as np

    required = [per_file[f]["der"] for f in per_file if f != "kokoro_ja_meeting"]
    return {
        "variant": name,
        "change": change,
        "options": options,
        "clustering_threshold": threshold,
        "files": per_file,
        "mean_der_dialogues_and_sample": round(float(np.mean(required)), 2),
        "mean_der_all": round(float(np.mean([r["der"] for r in per_file.values()])), 2),
    }


def markdown_row(row: dict) -> str:
    cells = [f"{r['der']:.2f}" for r in row["files"].values()]
    cells += [f"{row['mean_der_dialogues_and_sample']:.2f}", f"{row['mean_der_all']:.2f}",
              str(row.get("cpu_s_5min_excerpt", "-"))]
    return f"| {row['variant']} | " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "diarization_quality.json")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    from whisper_endpoint.diarization import pyannote_quietly

    with pyannote_quietly():
        names = list(test_files())
    print("| variant | " + " | ".join(names) + " | mean (dialogues + sample) | mean (all) | CPU s, 5 min |")
    result = evaluate(args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
