"""Repetition loops on long audio: windows that failed before and after they are decoded again, and WER.

    .venv/bin/python -m evaluation loops [--files stress/stress_en_readback ...] [--backend transformers]
                                         [--out results/loops.json]

Every file is decoded twice by our handler at its defaults (embedded base, one thread, no diarization; on
CTranslate2 in int8, or on ``--backend transformers`` in float32): once with the failed-window check switched off here (``before``: what the batched decoder
alone gives) and once as shipped (``after``: failed windows decoded again, asr/long_form/recovery.py). For
each side: WER (Whisper's BasicTextNormalizer), CPU seconds of the transcription, the windows judged
failed and not recovered (the response's ``decoding``; ``before`` is judged after the fact by the same
detector on the first decodes, which the ``after`` run makes), the longest run of reference words lost
and the phrases repeated 3+ times in a row in the text (evaluation/whisperx.py's measures). Files: the
repetition-loop stress set (audio/stress, issue 57) and the dev dialogues.
"""

from __future__ import annotations

import json
import logging
import os
import time
from contextlib import contextmanager

from evaluation.whisperx import ONE_THREAD, ROOT, losses, reference, score

STRESS = [f"stress/{p.stem}" for p in sorted((ROOT / "audio" / "stress").glob("*.flac"))]
DIALOGUES = ["dialogues/fillets_barrel", "dialogues/fillets_cave", "dialogues/flite_meeting"]


@contextmanager
def detector_off():
    """No window is judged failed: the decoding as it was before the check (nothing decoded again)."""
    from whisper_endpoint.asr.long_form import failed_windows

    original = failed_windows.failure
    failed_windows.failure = lambda decoded: None
    try:
        yield
    finally:
        failed_windows.failure = original


def side(handler, stem: str) -> dict:
    # The temperature fallback samples (the remainders' second pass, windows decoded again), and
    # ctranslate2.set_random_seed does not reach the model's worker thread: a file where no window failed
    # can still differ between the two sides where a remainder was sampled.
    data = (ROOT / "audio" / f"{stem}.flac").read_bytes()
    started = time.process_time()
    result = handler({"inputs": data, "parameters": {"diarize": False}})
    cpu = time.process_time() - started
    decoding = result["decoding"]
    lost = losses(stem, result["text"])
    return {
        "wer_pct": round(score(stem, result["text"]), 2), "cpu_s": round(cpu, 2),
        "windows_decoded_again": decoding.get("windows_decoded_again", 0),
        "windows_not_recovered": decoding.get("windows_not_recovered", 0),
        "encoder_windows": decoding["encoder_windows"],
        "longest_lost_run_words": max((run["words"] for run in lost["longest_lost_runs"]), default=0),
        "repeated_phrases": lost["repeated_phrases"],
        "warnings": result["warnings"], "text": result["text"],
    }


def main(argv: list[str]) -> int:
    from evaluation import parser, save
    from support.metrics import wer
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    options = parser("loops")
    options.add_argument("--files", nargs="+", default=STRESS + DIALOGUES)
    options.add_argument("--backend", choices=["ctranslate2", "transformers"], default="ctranslate2")
    args = options.parse_args(argv)
    os.environ.update(ONE_THREAD)
    import torch

    torch.set_num_threads(1)  # the transformers backend's (CTranslate2 takes cpu_threads)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("whisper_endpoint.asr.long_form.recovery").setLevel(logging.INFO)  # each window decoded again
    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", cpu_threads=1,
                                                     asr_backend=args.backend))
    files, sides = [], {"before": {}, "after": {}}
    for stem in args.files:
        with detector_off():
            sides["before"][stem] = side(handler, stem)
        sides["after"][stem] = side(handler, stem)
        before, after = sides["before"][stem], sides["after"][stem]
        # The first decode is the same in both runs: the windows the after run judged failed had failed before.
        before["windows_failed"] = after["windows_decoded_again"]
        files.append({"file": stem, "unchanged": before["text"] == after["text"], "before": before, "after": after})
        print(stem, {name: (s[stem]["wer_pct"], s[stem]["cpu_s"], s[stem]["windows_decoded_again"],
                            s[stem]["windows_not_recovered"]) for name, s in sides.items()}, flush=True)
    summary = {}
    for group, stems in (("stress", [s for s in args.files if s in STRESS]), ("all", args.files)):
        if not stems:
            continue
        for name, runs in sides.items():
            summary[f"{group}_pooled_wer_{name}"] = round(
                100 * wer([reference(s)[0] for s in stems], [runs[s]["text"] for s in stems]), 2)
            summary[f"{group}_cpu_s_{name}"] = round(sum(runs[s]["cpu_s"] for s in stems), 2)
        summary[f"{group}_cpu_ratio_after_to_before"] = round(
            summary[f"{group}_cpu_s_after"] / summary[f"{group}_cpu_s_before"], 3)
        summary[f"{group}_windows_failed_before"] = sum(sides["after"][s]["windows_decoded_again"] for s in stems)
        summary[f"{group}_windows_not_recovered_after"] = sum(sides["after"][s]["windows_not_recovered"]
                                                              for s in stems)
        summary[f"{group}_files_unchanged"] = sum(row["unchanged"] for row in files if row["file"] in stems)
    print(json.dumps(summary, indent=2))
    model = "int8" if args.backend == "ctranslate2" else "transformers, float32"
    report = {"model": f"embedded:base, {model}, CPU, one thread", "backend": args.backend, "summary": summary,
              "files": files}
    save("loops", args.out, report, argv)
    return 0
