"""Who said what: cpWER and tcpWER of our word/speaker merge vs the reference handler's.

    python -m evaluation speaker_attribution [--files flite_meeting ...] [--out results/speaker_attribution.json]

For every file with a transcript per speaker (the dialogues and, never tuned on, the Japanese meeting
and the 13.4-minute long file): one ASR pass (embedded base, CTranslate2, word
timestamps, the file's language given) and one diarization pass (DIARIZATION_MODEL=embedded). Then
two merges of the same transcript and the same diarization:

- ours: ``speaker_merge.merge_speakers`` (each word to the exclusive turn overlapping it most,
  smoothed; runs split at speaker changes), as the handler does;
- reference: the blog's handler (also insanely-fast-whisper and speechbox): consecutive same-speaker
  turns collapsed, each turn's end matched to the nearest ASR *chunk* end, whole chunks assigned
  (``reference_merge`` below, written from the algorithm's description: the blog's ``postprocess``).

Scores (``support.metrics``, MeetEval): cpWER (cpCER for Japanese) against each reference speaker's
text, and tcpWER, which also requires each word within 5 s of its reference time. The same
diarization's DER is ``python -m evaluation diarization``'s (results/diarization.json).
"""

from __future__ import annotations

import json
import os
import sys

from evaluation.diarization import decode, shown
from support.metrics import TCP_COLLAR_S
from support.paths import AUDIO

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")

# name: (audio, language, scored by characters, tuned on)
FILES = {
    "fillets_barrel": (AUDIO / "dialogues" / "fillets_barrel.flac", "nl", False, True),
    "fillets_cave": (AUDIO / "dialogues" / "fillets_cave.flac", "nl", False, True),
    "flite_meeting": (AUDIO / "dialogues" / "flite_meeting.flac", "en", False, True),
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


def said(items) -> list:
    """Reference turns or merged speaker runs as MeetEval's stretches of speech."""
    from support.metrics import Said

    return [Said(item["speaker"], *_times(item), item["text"]) for item in items]


def _times(item) -> tuple[float, float]:
    if "timestamp" in item:
        return float(item["timestamp"][0]), float(item["timestamp"][1])
    return float(item["start"]), float(item["end"])


def evaluate(names: list[str]) -> dict:
    import numpy as np

    from support.metrics import Said, cp_wer, tcp_wer
    from whisper_endpoint.core.config import InferenceConfig, ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.speakers.merge import merge_speakers

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", diarization_model="embedded"))
    rows = {}
    for name in names:
        path, language, characters, tuned = FILES[name]
        samples = decode(path)
        duration = len(samples) / 16000
        diarization = handler.diarizer.diarize(samples)
        transcript = handler.asr.transcribe(samples, InferenceConfig(language=language, return_timestamps="word"))
        truth_turns = json.loads(path.with_suffix(".json").read_text())["turns"]
        truth = said(truth_turns)
        ours = merge_speakers(transcript.segments, diarization.exclusive, duration=duration)
        chunks = [{"text": s.text, "timestamp": (s.start, s.end)} for s in transcript.segments]
        theirs = reference_merge(chunks, diarization.turns)
        unit = "cpcer" if characters else "cpwer"
        row = {"file": shown(path), "tuned_on": tuned, "duration_s": round(duration, 1),
               "speakers_found": len(diarization.speakers), "speakers_true": len({t["speaker"] for t in truth_turns})}
        untimed = [Said(run["speaker"], 0.0, 0.0, run["text"]) for run in theirs]  # the reference keeps no times
        for side, merged in (("ours", said(ours)), ("reference", untimed)):
            row[f"{unit}_{side}"] = round(100 * cp_wer(truth, merged, characters=characters), 2)
            if side == "ours":  # the reference merge keeps no times
                row[f"t{unit}_{side}"] = round(100 * tcp_wer(truth, merged, characters=characters), 2)
        # The ASR's own errors bound both: the same words with every speaker right.
        row[f"{unit}_asr_only"] = round(100 * _asr_error(truth_turns, transcript, characters), 2)
        rows[name] = row
        print(name, json.dumps(row, ensure_ascii=False), flush=True)
    dialogues = [row for name, row in rows.items() if FILES[name][0].parent.name == "dialogues"]
    summary = {}
    if dialogues:
        ours = float(np.mean([r["cpwer_ours"] for r in dialogues]))
        theirs = float(np.mean([r["cpwer_reference"] for r in dialogues]))
        summary = {"dialogues_mean_cpwer_ours": round(ours, 2), "dialogues_mean_cpwer_reference": round(theirs, 2),
                   "dialogues_mean_tcpwer_ours": round(float(np.mean([r["tcpwer_ours"] for r in dialogues])), 2),
                   "dialogues_relative_reduction_pct": round(100 * (theirs - ours) / theirs, 1)}
    return {
        "asr": "embedded:base, ctranslate2 (default compute type), word timestamps, language given",
        "diarization": "embedded (default settings), exclusive turns for our merge, all turns for the reference",
        "metrics": f"cpWER / cpCER and tcpWER (collar {TCP_COLLAR_S:g} s) in %, MeetEval; the reference merge "
                   "keeps no times, so it has no tcpWER; DER: results/diarization.json",
        "files": rows,
        "summary": summary,
    }


def markdown_table(result: dict) -> str:
    """The docs' table."""
    lines = ["| file | tuned on | speakers found / true | cpWER ours | tcpWER ours | cpWER reference | ASR alone |",
             "|---|---|---|---|---|---|---|"]
    for name, row in result["files"].items():
        unit = "cpcer" if "cpcer_ours" in row else "cpwer"
        keys = (f"{unit}_ours", f"t{unit}_ours", f"{unit}_reference", f"{unit}_asr_only")
        scores = [f"{row[k]:.2f}%" + (" (chars)" if unit == "cpcer" else "") for k in keys]
        lines.append(f"| {name} ({row['duration_s']:.0f} s) | {'yes' if row['tuned_on'] else 'no'} "
                     f"| {row['speakers_found']} / {row['speakers_true']} | " + " | ".join(scores) + " |")
    return "\n".join(lines)


def _asr_error(truth_turns: list[dict], transcript, characters: bool) -> float:
    """The transcript's own WER (CER), speakers ignored: about what a perfect attribution would reach."""
    from support.metrics import cer, wer

    reference = " ".join(turn["text"] for turn in truth_turns)
    hypothesis = " ".join(segment.text.strip() for segment in transcript.segments)
    return (cer if characters else wer)([reference], [hypothesis])


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("speaker_attribution")
    options.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    options.add_argument("--table", action="store_true", help="print the table of an existing --out file and stop")
    args = options.parse_args(argv)
    if args.table:
        print(markdown_table(json.loads(args.out.read_text())))
        return 0
    result = evaluate(args.files)
    save("speaker_attribution", args.out, result, argv)
    print(markdown_table(result))
    return 0
