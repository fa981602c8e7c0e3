"""Who said what: DER of the embedded diarizer and cpWER of our merge vs the reference handler's.

    .venv/bin/python -m scripts.evaluate_speaker_attribution [--out results/speaker_attribution.json]
                                                            [--files flite_meeting ...] [--threads N]

For every file with ground truth (the dialogues, pyannote's sample, and, never tuned on, the
Japanese meeting and the 13.4-minute long file): one ASR pass (embedded base, CTranslate2, word
timestamps, the file's language given) and one diarization pass (DIARIZATION_MODEL=embedded). Then
two merges of the same transcript and the same diarization:

- ours: ``speaker_merge.merge_speakers`` (each word to the exclusive turn overlapping it most,
  smoothed; runs split at speaker changes), as the handler does;
- reference: the blog's handler (also insanely-fast-whisper and speechbox): consecutive same-speaker
  turns collapsed, each turn's end matched to the nearest ASR *chunk* end, whole chunks assigned
  (``reference_merge`` below, written from the algorithm's description: the blog's ``postprocess``).

Scores: DER (collar 0.25 s: missed, false alarm, confusion, as % of scored speech) against the RTTM;
cpWER (cpCER for Japanese) against the per-speaker reference text of the file's JSON. The pyannote
sample has no transcript, so only its DER is reported.
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

from scripts.evaluate_diarization import read_rttm, score, shown  # noqa: E402  (same DER scoring)

# name: (audio, language, scored by characters, tuned on)
FILES = {
    "fillets_barrel": (AUDIO / "dialogues" / "fillets_barrel.flac", "nl", False, True),
    "fillets_cave": (AUDIO / "dialogues" / "fillets_cave.flac", "nl", False, True),
    "flite_meeting": (AUDIO / "dialogues" / "flite_meeting.flac", "en", False, True),
    "pyannote_sample": (None, "en", False, True),
    "kokoro_ja_meeting": (AUDIO / "ja" / "kokoro_ja_meeting.flac", "ja", True, False),
    "fillets_long": (AUDIO / "long" / "fillets_long.flac", "nl", False, False),
}


def reference_merge(chunks: list[dict], turns) -> list[dict]:
    """The reference handler's chunk-level merge, kept faithful to its behaviour and its defects."""
    import numpy as np

    if not chunks or not turns:
        return []  # the reference crashes here; an empty result is the kindest reading
    # Consecutive same-speaker turns collapsed; a run ends where the next speaker starts.
    collapsed = [(previous.speaker, turn.start) for previous, turn in zip(turns, turns[1:])
                 if turn.speaker != previous.speaker]
    collapsed.append((turns[-1].speaker, turns[-1].end))
    ends = np.array([c["timestamp"][1] if c["timestamp"][1] is not None else sys.float_info.max for c in chunks])
    merged = []
    for speaker, end in collapsed:
        upto = int(np.argmin(np.abs(ends - end)))
        merged.append({"speaker": speaker, "text": "".join(c["text"] for c in chunks[: upto + 1])})
        chunks, ends = chunks[upto + 1 :], ends[upto + 1 :]
        if not len(ends):
            break  # later turns get nothing; chunks left after the last turn are dropped
    return merged


def by_speaker(items) -> dict[str, str]:
    """Each speaker's words, concatenated in time order."""
    texts: dict[str, list[str]] = {}
    for item in items:
        texts.setdefault(item["speaker"], []).append(item["text"].strip())
    return {speaker: " ".join(parts) for speaker, parts in texts.items()}


def evaluate(names: list[str]) -> dict:
    import numpy as np

    from scripts.metrics import cp_error_rate
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import InferenceConfig, ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.speakers.merge import merge_speakers

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", diarization_model="embedded"))
    rows = {}
    for name in names:
        path, language, characters, tuned = FILES[name]
        rttm = _sample_dir() / "sample.rttm" if path is None else path.with_suffix(".rttm")
        path = _sample_dir() / "sample.wav" if path is None else path
        samples = decode_file(path.read_bytes(), max_seconds=4 * 3600).samples
        duration = len(samples) / 16000
        started = time.perf_counter()
        diarization = handler.diarizer.diarize(samples)
        diarize_s = time.perf_counter() - started
        der = score(read_rttm(rttm), _annotation(diarization.exclusive), duration)
        row = {
            "file": shown(path),
            "tuned_on": tuned,
            "duration_s": round(duration, 1),
            "der": der["der"],
            "missed_pct": _pct(der["missed"], der["scored_speech"]),
            "false_alarm_pct": _pct(der["false_alarm"], der["scored_speech"]),
            "confusion_pct": _pct(der["confusion"], der["scored_speech"]),
            "speakers_found": der["speakers_found"],
            "speakers_true": der["speakers_true"],
            "diarization_seconds": round(diarize_s, 1),
        }
        truth_json = path.with_suffix(".json")
        if truth_json.exists():
            started = time.perf_counter()
            transcript = handler.asr.transcribe(samples, InferenceConfig(language=language, return_timestamps="word"))
            row["asr_seconds"] = round(time.perf_counter() - started, 1)
            truth_turns = json.loads(truth_json.read_text())["turns"]
            truth = by_speaker(truth_turns)
            ours = merge_speakers(transcript.segments, diarization.exclusive, duration=duration)
            chunks = [{"text": s.text, "timestamp": (s.start, s.end)} for s in transcript.segments]
            theirs = reference_merge(chunks, diarization.turns)
            unit = "cpcer" if characters else "cpwer"
            row[f"{unit}_ours"] = round(100 * cp_error_rate(truth, by_speaker(ours), characters=characters), 2)
            row[f"{unit}_reference"] = round(100 * cp_error_rate(truth, by_speaker(theirs), characters=characters), 2)
            # The ASR's own errors bound both: the same words with every speaker right.
            row[f"{unit}_asr_only"] = round(100 * _asr_error(truth_turns, transcript, characters), 2)
            row["asr_words"] = sum(len(s.words or ()) for s in transcript.segments)
        rows[name] = row
        print(name, json.dumps(row, ensure_ascii=False), flush=True)
    dialogues = [row for name, row in rows.items() if FILES[name][0] is not None
                 and FILES[name][0].parent.name == "dialogues"]
    summary = {}
    if dialogues:
        ours = float(np.mean([r["cpwer_ours"] for r in dialogues]))
        theirs = float(np.mean([r["cpwer_reference"] for r in dialogues]))
        summary = {"dialogues_mean_cpwer_ours": round(ours, 2), "dialogues_mean_cpwer_reference": round(theirs, 2),
                   "dialogues_relative_reduction_pct": round(100 * (theirs - ours) / theirs, 1)}
    return {
        "asr": "embedded:base, ctranslate2 (default compute type), word timestamps, language given",
        "diarization": "embedded (default settings), exclusive turns for our merge, all turns for the reference",
        "metrics": "DER collar 0.25 s (pct of scored speech); cpWER / cpCER in %",
        "files": rows,
        "summary": summary,
    }


def markdown_table(result: dict) -> str:
    """The README's table."""
    lines = [
        "| file | tuned on | DER | missed / false alarm / confusion (% of speech) | speakers found / true "
        "| cpWER ours | cpWER reference | ASR alone |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in result["files"].items():
        unit = "cpcer" if "cpcer_ours" in row else "cpwer"
        scores = [f"{row[f'{unit}_{k}']:.2f}%" if f"{unit}_{k}" in row else "-" for k in ("ours", "reference", "asr_only")]
        if unit == "cpcer":
            scores = [f"{score} (chars)" for score in scores]
        lines.append(
            f"| {name} ({row['duration_s']:.0f} s) | {'yes' if row['tuned_on'] else 'no'} | {row['der']:.2f}% "
            f"| {row['missed_pct']:.1f} / {row['false_alarm_pct']:.1f} / {row['confusion_pct']:.1f} "
            f"| {row['speakers_found']} / {row['speakers_true']} | " + " | ".join(scores) + " |"
        )
    return "\n".join(lines)


def _asr_error(truth_turns: list[dict], transcript, characters: bool) -> float:
    """The transcript's own WER (CER), speakers ignored: about what a perfect attribution would reach."""
    from scripts.metrics import cer, wer

    reference = " ".join(turn["text"] for turn in truth_turns)
    hypothesis = " ".join(segment.text.strip() for segment in transcript.segments)
    return (cer if characters else wer)([reference], [hypothesis])


def _annotation(turns):
    from pyannote.core import Annotation, Segment

    annotation = Annotation()
    for turn in turns:
        annotation[Segment(turn.start, turn.end)] = turn.speaker
    return annotation


def _pct(part: float, whole: float) -> float:
    return round(100 * part / whole, 2) if whole else 0.0


def _sample_dir() -> Path:
    import pyannote.audio

    return Path(pyannote.audio.__file__).parent / "sample"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "speaker_attribution.json")
    parser.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--table", action="store_true", help="print the table of an existing --out file and stop")
    args = parser.parse_args()
    if args.table:
        print(markdown_table(json.loads(args.out.read_text())))
        return 0
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    result = evaluate(args.files)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(markdown_table(result))
    print(json.dumps(result["summary"]), f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
