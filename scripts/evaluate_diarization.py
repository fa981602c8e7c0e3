"""DER of the embedded diarization pipeline, from the first untuned assembly to the current defaults.

    .venv/bin/python -m scripts.evaluate_diarization [--out results/diarization_quality.json] [--threads 1]

Files: every dialogue in ../shared/audio/dialogues, pyannote's own sample (inside the pyannote.audio
wheel) and the Japanese meeting in ../shared/audio/ja, each with RTTM ground truth. DER as
pyannote.metrics computes it, with a 0.25 s collar, on the exclusive output (one speaker at a time,
what the word/speaker merge uses). Missed, false alarm and confusion are in seconds.

Variants that share a window step share that step's segmentation and embeddings (computed once per
file, as pyannote's own tuning cache does); their ``seconds`` are those of the first, uncached run
(without the speech fill, whose Silero pass adds about 0.003 x real time).
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
AUDIO = Path(os.environ.get("SHARED_AUDIO", ROOT.parent / "shared" / "audio"))
COLLAR = 0.25

# (name, what changed, window step, clustering threshold, speech fill, turn check)
VARIANTS = [
    ("first assembly", "offline-models.md's untuned assembly", 0.25, 0.65, False, False),
    ("+ speech fill", "Silero VAD (threshold 0.2) speech given to the nearest speaker", 0.25, 0.65, True, False),
    ("threshold 0.6", "clustering threshold 0.6 (no change at this step)", 0.25, 0.6, True, False),
    ("step 0.1, no fill", "window step 0.1 alone", 0.1, 0.6, False, False),
    ("step 0.1 + speech fill", "window step 0.1 + speech fill", 0.1, 0.6, True, False),
    ("embedded default", "+ each turn of 1 s or more re-embedded alone, nearest centroid (turn_check.py)",
     0.1, 0.6, True, True),
]


def test_files() -> dict[str, tuple[Path, Path]]:
    import pyannote.audio

    sample = Path(pyannote.audio.__file__).parent / "sample"
    files = {"pyannote_sample": (sample / "sample.wav", sample / "sample.rttm")}
    for rttm in sorted((AUDIO / "dialogues").glob("*.rttm")) + sorted((AUDIO / "ja").glob("*.rttm")):
        files[rttm.stem] = (rttm.with_suffix(".flac"), rttm)
    return files


def shown(path: Path) -> str:
    """A path as it reads on any machine: inside the repository's parent, or inside a package."""
    for base, prefix in ((Path(sys.prefix), "<venv>/"), (ROOT.parent, "../")):
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
    from whisper_endpoint.audio import decode_file

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
    import numpy as np
    import torch

    from whisper_endpoint.diarization import pyannote_quietly
    from whisper_endpoint.diarization.speech_fill import SpeechFillOptions
    from whisper_endpoint.diarization.turn_check import MIN_DURATION_S

    if threads:
        torch.set_num_threads(threads)
    with pyannote_quietly():
        from whisper_endpoint.diarization.offline import OfflineSpeakerDiarization

        files = test_files()
    audio = {name: decode(path) for name, (path, _) in files.items()}
    references = {name: read_rttm(rttm) for name, (_, rttm) in files.items()}
    pipelines: dict[float, OfflineSpeakerDiarization] = {}
    rows = []
    for name, change, step, threshold, fill, check in VARIANTS:
        first_run = step not in pipelines
        if first_run:
            pipelines[step] = OfflineSpeakerDiarization(segmentation_step=step)
            SharedFrontEnd(pipelines[step])
        pipeline = pipelines[step]
        pipeline.instantiate({"clustering": {"threshold": threshold}})
        pipeline.speech_fill = SpeechFillOptions() if fill else None
        pipeline.turn_check = MIN_DURATION_S if check else None
        per_file = {}
        for file, samples in audio.items():
            started = time.perf_counter()
            waveform = {"waveform": torch.from_numpy(samples)[None], "sample_rate": 16000, "uri": file}
            output = pipeline(waveform)
            row = score(references[file], output.exclusive_speaker_diarization, len(samples) / 16000)
            if first_run:
                row["seconds"] = round(time.perf_counter() - started, 1)
                row["real_time_factor"] = round(row["seconds"] / (len(samples) / 16000), 3)
            per_file[file] = row
        required = [per_file[f]["der"] for f in per_file if f != "kokoro_ja_meeting"]
        rows.append({
            "variant": name,
            "change": change,
            "segmentation_step": step,
            "clustering_threshold": threshold,
            "speech_fill": fill,
            "turn_check": check,
            "files": per_file,
            "mean_der_dialogues_and_sample": round(float(np.mean(required)), 2),
            "mean_der_all": round(float(np.mean([r["der"] for r in per_file.values()])), 2),
        })
        print(markdown_row(rows[-1]), flush=True)
    return {
        "metric": f"DER (%), collar {COLLAR} s, exclusive output; missed/false_alarm/confusion in seconds",
        "torch_threads": torch.get_num_threads(),
        "files": {name: shown(path) for name, (path, _) in files.items()},
        "variants": rows,
    }


def markdown_row(row: dict) -> str:
    cells = [f"{r['der']:.2f}" for r in row["files"].values()]
    cells += [f"{row['mean_der_dialogues_and_sample']:.2f}", f"{row['mean_der_all']:.2f}"]
    return f"| {row['variant']} | " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "diarization_quality.json")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args()
    from whisper_endpoint.diarization import pyannote_quietly

    with pyannote_quietly():
        names = list(test_files())
    print("| variant | " + " | ".join(names) + " | mean (dialogues + sample) | mean (all) |")
    result = evaluate(args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
