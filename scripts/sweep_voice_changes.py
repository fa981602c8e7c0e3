"""Speaker counts for settings of the voice-change cut and the count check's ``separation``.

    .venv/bin/python -m scripts.sweep_voice_changes [--out results/voice_changes_sweep.json]

On the sets the diarizer is tuned on (tuning, dev, negatives; never judging or the held-out files).
Each file is diarized once (frames, clustering, turn check); then, for every setting, its exclusive
turns are cut (voice_changes.split_turns; ``cut none``: not cut, the count check alone) and the count
check is run on the pieces. The count is the speakers of the exclusive turns plus those the check adds.
The pieces' turn check is left out here (it moves pieces between speakers found, it does not change
the count).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.evaluate_diarization import ROOT  # noqa: E402
from scripts.speaker_count_sets import TUNED, load  # noqa: E402

CUTS = (None, 0.62, 0.66, 0.7)
SEPARATIONS = (0.1, 0.12, 0.13, 0.14, 0.15, 0.16)


def sweep() -> dict:
    import torch

    from whisper_endpoint.diarization import count_check, pooled, pyannote_quietly, voice_changes

    torch.set_num_threads(1)
    with pyannote_quietly():
        from whisper_endpoint.diarization.offline import OfflineSpeakerDiarization

        diarizer = OfflineSpeakerDiarization()
    seen = {}
    cut_turns = diarizer._cut_voice_changes

    def keep(output, embed, samples, frames):  # what the cut and the count check start from
        seen.update(output=output, embed=embed, samples=samples, frames=frames)
        return cut_turns(output, embed, samples, frames)

    diarizer._cut_voice_changes = keep
    trunk = pooled.Trunk(diarizer.embedding_network)
    files = {}
    for file in load(tuple(sorted(TUNED))):
        diarizer({"waveform": torch.from_numpy(file.samples)[None], "sample_rate": 16000, "uri": file.name})
        output = seen["output"]
        labels, whole = output.speaker_diarization.labels(), output.exclusive_speaker_diarization
        counts, alone = {}, diarizer._embed_alone(seen["samples"])
        for cut in CUTS:
            pieces = whole if cut is None else voice_changes.split_turns(
                whole, seen["frames"], trunk, seen["samples"], voice_changes.VoiceChangeOptions(similarity=cut))
            for separation in SEPARATIONS:
                options = count_check.CountCheckOptions(separation=separation)
                found = count_check.split(pieces, labels, seen["embed"], options, None, alone)
                counts[f"cut {cut} / separation {separation}"] = len(set(whole.labels()) | {m.new for m in found.moves})
        true = len(file.reference.labels())
        files[file.name] = {"set": file.set, "speakers_true": true, "speakers_found": counts}
        print(file.name, true, {k: v for k, v in counts.items() if v != true} or "all right", flush=True)
    right = {key: [name for name, row in files.items() if row["speakers_found"][key] == row["speakers_true"]]
             for key in next(iter(files.values()))["speakers_found"]}
    return {"files": files, "count_right": {key: len(names) for key, names in right.items()},
            "torch_threads": torch.get_num_threads(), "how": "python -m scripts.sweep_voice_changes"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "voice_changes_sweep.json")
    args = parser.parse_args()
    result = sweep()
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
