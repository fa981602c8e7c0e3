"""Is Whisper's word confidence useful, and do hotwords help? Both backends, on the dev files.

1. Word probability: every decoded word (``return_confidence``, word timestamps) is marked right or
   wrong by aligning the normalised hypothesis to the reference (jiwer: a substituted or inserted word
   is wrong); the error rate of words with probability < 0.5 against >= 0.5.
2. Hotwords: on the clips where the model (decoding without hotwords) misses reference words, those
   missed words are given as ``hotwords`` (what a user who knows the names would send); WER of those
   clips with and without.

    python -m evaluation confidence [--quick]   # writes results/confidence.json

Dev files (audio/README.md): the 30 clips and the English flite meeting; ctranslate2 also the
two Dutch dialogues. Tuning-free: nothing is chosen from these numbers.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from support.metrics import normalize, wer

from support.paths import AUDIO

THRESHOLD = 0.5
RUNS = [  # (backend, model, with the Dutch dialogues)
    ("ctranslate2", "embedded:base", True),
    ("ctranslate2", "embedded:tiny.en", False),
    ("transformers", "embedded:tiny.en", False),
]


def dev_files(dialogues: bool) -> list[tuple[Path, str, str | None]]:
    """(audio, reference text, language) of each dev file."""
    clips = json.loads((AUDIO / "clips" / "refs.json").read_text())
    files = [(AUDIO / "clips" / c["file"], c["text"], c["language"]) for c in clips]
    names = ["flite_meeting"] + (["fillets_barrel", "fillets_cave"] if dialogues else [])
    for name in names:
        turns = json.loads((AUDIO / "dialogues" / f"{name}.json").read_text())
        turns = turns["turns"] if isinstance(turns, dict) else turns
        text = " ".join(t["text"] for t in sorted(turns, key=lambda t: t["start"]))
        files.append((AUDIO / "dialogues" / f"{name}.flac", text, "nl" if name.startswith("fillets") else "en"))
    return files


def marked_words(reference: str, chunks: list[dict]) -> list[tuple[float, bool]]:
    """(probability, wrong) of every normalised hypothesis word, aligned to the reference."""
    import jiwer

    words = [(token, chunk["probability"]) for chunk in chunks for token in normalize(chunk["text"]).split()]
    if not words:
        return []
    alignment = jiwer.process_words(normalize(reference), " ".join(t for t, _ in words)).alignments[0]
    wrong = [True] * len(words)
    for part in alignment:
        if part.type == "equal":
            for index in range(part.hyp_start_idx, part.hyp_end_idx):
                wrong[index] = False
    return [(probability, bad) for (_, probability), bad in zip(words, wrong)]


def missed_words(reference: str, hypothesis: str) -> list[str]:
    said = set(normalize(hypothesis).split())
    return list(dict.fromkeys(w for w in normalize(reference).split() if w not in said and not w.isdigit()))


def run(backend: str, model: str, dialogues: bool, quick: bool) -> dict:
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model=model, asr_backend=backend))
    english_only = model.endswith(".en")
    files = [f for f in dev_files(dialogues) if not (english_only and f[2] != "en")][: 8 if quick else None]
    marks, hot = [], []
    started = time.process_time()
    for path, reference, language in files:
        parameters = {"return_timestamps": "word", "return_confidence": True, "language": language}
        result = handler({"inputs": path.read_bytes(), "parameters": parameters})
        marks += marked_words(reference, result["chunks"])
        missed = missed_words(reference, result["text"])
        if missed and language == "en":  # the Dutch subtitles differ from the speech: no names to give
            again = handler({"inputs": path.read_bytes(), "parameters": {"language": language,
                                                                        "hotwords": " ".join(missed)[:1000]}})
            hot.append({"file": path.name, "hotwords": missed, "reference": reference,
                        "without": result["text"], "with": again["text"]})
    return {"backend": backend, "model": model, "files": len(files), "words": _bins(marks),
            "hotwords": _hotwords(hot), "cpu_s": round(time.process_time() - started, 1)}


def _bins(marks: list[tuple[float, bool]]) -> dict:
    def rate(selected):
        return {"words": len(selected), "error_rate": round(sum(selected) / len(selected), 3) if selected else None}

    return {f"p<{THRESHOLD}": rate([bad for p, bad in marks if p < THRESHOLD]),
            f"p>={THRESHOLD}": rate([bad for p, bad in marks if p >= THRESHOLD])}


def _hotwords(clips: list[dict]) -> dict:
    if not clips:
        return {"clips": 0}
    references = [c["reference"] for c in clips]
    return {"clips": len(clips), "wer_without": round(wer(references, [c["without"] for c in clips]), 3),
            "wer_with": round(wer(references, [c["with"] for c in clips]), 3), "detail": clips}


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("confidence")
    options.add_argument("--quick", action="store_true", help="8 files per run (a smoke check, not the figures)")
    args = options.parse_args(argv)
    results = [run(backend, model, dialogues, args.quick) for backend, model, dialogues in RUNS]
    save("confidence", args.out, {"threshold": THRESHOLD, "runs": results}, argv)
    for r in results:
        print(r["backend"], r["model"], json.dumps(r["words"]),
              json.dumps({k: v for k, v in r["hotwords"].items() if k != "detail"}), f"{r['cpu_s']} s CPU")
    return 0
