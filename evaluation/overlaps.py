"""People talking at once: who said the overlapped words, the backchannels kept, the overlaps marked.

    python -m evaluation overlaps [--seeds 0 1 2] [--cache DIR] [--out results/overlaps.json]

The three dialogues of audio/dialogues, each rebuilt per seed by ``support.overlaps`` (a third of the
speaker changes overlapped by 0.5-1.5 s, one backchannel of the listener in a pause of a long turn). One
ASR pass (embedded base, CTranslate2, word timestamps, the file's language given) and one diarization
pass (DIARIZATION_MODEL=embedded) per file, kept in ``--cache`` when given (the speaker step alone is
then re-run). Scores: WER (speakers ignored) and cpWER (MeetEval) of the response's speaker runs, and
of the runs before the overlap rules (``merge_speakers`` on the exclusive turns alone, no marks); the
overlap marks' precision and recall, in time and in stretches (a truth overlap is found when a mark
meets it); whether the ASR wrote the backchannel at all, and whether it came back as a run of its own
(at most three words, at its time, of another speaker than the run before it).
"""

from __future__ import annotations

import json
import pickle
import re
from itertools import pairwise
from pathlib import Path

from support.overlaps import DIALOGUES, overlapped

BACKCHANNEL = re.compile(r"yeah|yes|ja|o|oh")
LANGUAGES = {"flite_meeting": "en", "fillets_barrel": "nl", "fillets_cave": "nl"}


def heard(handler, name: str, seed: int, cache: Path | None):
    """(truth, transcript, diarization) of one rebuilt file, from ``cache`` when it holds them."""
    from whisper_endpoint.core.config import InferenceConfig

    made = overlapped(name, seed)
    kept = cache / f"{name}-{seed}.pickle" if cache else None
    if kept is not None and kept.exists():
        transcript, diarization = pickle.loads(kept.read_bytes())
    else:
        config = InferenceConfig(language=LANGUAGES[name], return_timestamps="word")
        transcript = handler.asr.transcribe(made.samples, config)
        diarization = handler.diarizer.diarize(made.samples)
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(pickle.dumps((transcript, diarization)))
    return made, transcript, diarization


def scores(made, transcript, diarization, diarizer) -> dict:
    from support.metrics import Said, cp_wer, wer
    from whisper_endpoint.core.config import InferenceConfig
    from whisper_endpoint.speakers.merge import merge_speakers
    from whisper_endpoint.speakers.step import Heard, speakers_of

    config = InferenceConfig(return_timestamps="word")
    runs = speakers_of(diarizer, Heard(made.samples, transcript, diarization, made.duration), config).runs
    before = merge_speakers(transcript.segments, diarization.exclusive, duration=made.duration)  # no overlap rules
    truth = [Said(t.speaker, t.start, t.end, t.text) for t in made.turns]
    reference = " ".join(t.text for t in made.turns)
    row = {"duration_s": round(made.duration, 1), "truth_overlaps": len(made.overlaps()),
           "wer": round(100 * wer([reference], [transcript.text]), 2),
           "cpwer_before": round(100 * cp_wer(truth, _said(before)), 2), "cpwer": round(100 * cp_wer(truth, _said(runs)), 2)}
    row.update(_marked(runs, made.overlaps()))
    row["backchannel_heard"] = _heard(transcript, made.backchannel)
    row["backchannel_kept_before"] = _kept(before, made.backchannel)
    row["backchannel_kept"] = _kept(runs, made.backchannel)
    return row


def _said(runs: list[dict]) -> list:
    from support.metrics import Said

    return [Said(r["speaker"], *r["timestamp"], r["text"]) for r in runs]


def _marked(runs: list[dict], truth: list[tuple[float, float]]) -> dict:
    marks = sorted({(start, end) for run in runs for start, end, _ in run.get("overlap", ())})
    inside = sum(_shared(mark, truth) for mark in marks)
    return {"marks": len(marks),
            "marked_s": round(sum(e - s for s, e in marks), 2), "truth_overlap_s": round(sum(e - s for s, e in truth), 2),
            "precision_time": round(inside / sum(e - s for s, e in marks), 3) if marks else None,
            "recall_time": round(sum(_shared(t, marks) for t in truth) / sum(e - s for s, e in truth), 3),
            "marks_right": sum(_shared(mark, truth) > 0 for mark in marks),
            "overlaps_found": sum(_shared(t, marks) > 0 for t in truth)}


def _shared(span: tuple[float, float], others: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(span[1], e) - max(span[0], s)) for s, e in others)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _kept(runs: list[dict], backchannel) -> bool | None:
    """A run of at most three words at the backchannel's time, of a speaker other than the run before's."""
    if backchannel is None:
        return None
    for before, run in pairwise(runs):
        start, end = run["timestamp"]
        near = start < backchannel.end + 0.5 and backchannel.start - 0.5 < end
        if near and len(_words(run["text"])) <= 3 and before["speaker"] != run["speaker"]:
            return True
    return False


def _heard(transcript, backchannel) -> bool | None:
    """Whether the ASR wrote the backchannel at all ("yeah", "ja", "oh ja"...)."""
    if backchannel is None:
        return None
    return any(BACKCHANNEL.fullmatch(" ".join(_words(word.text))) and
               backchannel.start - 0.3 <= (word.start + word.end) / 2 <= backchannel.end + 0.3
               for word in transcript.words)


def evaluate(seeds: list[int], cache: Path | None) -> dict:
    import numpy as np

    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", diarization_model="embedded"))
    rows = {}
    for name in DIALOGUES:
        for seed in seeds:
            made, transcript, diarization = heard(handler, name, seed, cache)
            rows[f"{name}-{seed}"] = row = scores(made, transcript, diarization, handler.diarizer)
            print(f"{name}-{seed}", json.dumps(row), flush=True)
    values = list(rows.values())
    marks = sum(r["marks"] for r in values)
    summary = {
        "mean_wer": round(float(np.mean([r["wer"] for r in values])), 2),
        "mean_cpwer_before": round(float(np.mean([r["cpwer_before"] for r in values])), 2),
        "mean_cpwer": round(float(np.mean([r["cpwer"] for r in values])), 2),
        "marks_precision": round(sum(r["marks_right"] for r in values) / marks, 3) if marks else None,
        "overlaps_recall": round(sum(r["overlaps_found"] for r in values) / sum(r["truth_overlaps"] for r in values), 3),
        "precision_time": _ratio(values, "precision_time", "marked_s"),
        "recall_time": _ratio(values, "recall_time", "truth_overlap_s"),
        "backchannels": sum(r["backchannel_kept"] is not None for r in values),
        "backchannels_heard": sum(r["backchannel_heard"] is True for r in values),
        "backchannels_kept_before": sum(r["backchannel_kept_before"] is True for r in values),
        "backchannels_kept": sum(r["backchannel_kept"] is True for r in values),
    }
    print(json.dumps(summary), flush=True)
    return {"asr": "embedded:base, ctranslate2, word timestamps, language given",
            "diarization": "embedded (default settings)",
            "audio": "support.overlaps: the dialogues with a third of the speaker changes overlapped by 0.5-1.5 s "
                     "and one backchannel each, per seed",
            "files": rows, "summary": summary}


def _ratio(rows: list[dict], rate: str, weight: str) -> float | None:
    """A rate over all files, each file weighted by its seconds."""
    pairs = [(r[rate], r[weight]) for r in rows if r[rate] is not None]
    total = sum(w for _, w in pairs)
    return round(sum(v * w for v, w in pairs) / total, 3) if total else None


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("overlaps")
    options.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    options.add_argument("--cache", type=Path, help="keep each file's transcript and diarization here")
    args = options.parse_args(argv)
    save("overlaps", args.out, evaluate(args.seeds, args.cache), argv)
    return 0
