"""What the voice-change cut and the count check cost on the 13.4 min file, as a share of the diarizer's CPU.

    .venv/bin/python -m scripts.measure_voice_changes_cost [--repeats 3] [--out results/voice_changes.json]

One torch thread, one process. The diarizer runs once whole (``diarizer_cpu_s``: process CPU of that
run); its state before the cut (exclusive turns, CAM++ frames, embedder) is kept, and then the cut
(voice_changes.split_turns) and the count check on its pieces (count_check.split, with the joins'
turns embedded alone) run ``--repeats`` times each, interleaved, timed with ``time.process_time``.
The medians go under ``cost_at_13_4_min`` in the results file (other keys kept), with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.evaluate_diarization import ROOT  # noqa: E402
from scripts.speaker_count_sets import load  # noqa: E402


def measure(repeats: int) -> dict:
    import torch

    from whisper_endpoint.diarization import count_check, pooled, pyannote_quietly, voice_changes

    torch.set_num_threads(1)
    with pyannote_quietly():
        from whisper_endpoint.diarization.offline import OfflineSpeakerDiarization

        diarizer = OfflineSpeakerDiarization()
    seen, cut_turns = {}, diarizer._cut_voice_changes

    def keep(output, embed, samples, frames):
        seen.update(output=output, embed=embed, samples=samples, frames=frames)
        return cut_turns(output, embed, samples, frames)

    diarizer._cut_voice_changes = keep
    file = load(("long",))[0]
    started = time.process_time()
    diarizer({"waveform": torch.from_numpy(file.samples)[None], "sample_rate": 16000, "uri": file.name})
    whole = time.process_time() - started
    whole_turns = seen["output"].exclusive_speaker_diarization
    labels, trunk = whole_turns.labels(), pooled.Trunk(diarizer.embedding_network)
    alone = diarizer._embed_alone(seen["samples"])
    cut_s, check_s = [], []
    for _ in range(repeats):
        started = time.process_time()
        pieces = voice_changes.split_turns(whole_turns, seen["frames"], trunk, seen["samples"], diarizer.voice_changes)
        cut_s.append(time.process_time() - started)
        started = time.process_time()
        count_check.split(pieces, labels, seen["embed"], diarizer.count_check, None, alone)
        check_s.append(time.process_time() - started)
    cut, check = statistics.median(cut_s), statistics.median(check_s)
    return {
        "file": file.name, "duration_s": round(file.duration, 1), "diarizer_cpu_s": round(whole, 1),
        "voice_changes_cpu_s": round(cut, 3), "count_check_cpu_s": round(check, 3),
        "share_of_diarizer": round((cut + check) / whole, 4), "repeats": repeats,
        "load_average_1min": round(os.getloadavg()[0], 1), "torch_threads": torch.get_num_threads(),
        "how": "python -m scripts.measure_voice_changes_cost",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "voice_changes.json")
    args = parser.parse_args()
    cost = measure(args.repeats)
    print(json.dumps(cost, indent=1))
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    result["cost_at_13_4_min"] = cost
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
