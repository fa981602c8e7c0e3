"""Words invented over non-speech, and what the gating costs speech: ``drop_non_speech`` false vs true.

    python -m scripts.evaluate_nonspeech [--parts corpus speech] [--out results/nonspeech.json]

corpus: the files of scripts/nonspeech_corpus.py through the handler (ctranslate2 ``base``, the
multilingual model that names a language for noise, and the transformers backend with ``tiny.en``),
each file once with ``drop_non_speech: false`` (before) and once with the default (after), with word
timestamps: every word counts on the non-speech files, only the words outside the speech (more than
``SLACK_S`` away from it) on the files with speech. Also the VAD's CPU time per second of audio.

speech: WER (Whisper's BasicTextNormalizer) before and after, same run, ctranslate2 ``base``: the 30
clips, the three dialogues, the 13.4 min file (long/) and CER on the Japanese meeting (ja/). The two
last are untuned checks (../shared/audio/README.md): run once, never tuned on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT.parent / "shared" / "audio"
SLACK_S = 1.0  # Whisper's word times are loose by up to about a second at a speech edge
RUNS = [("ctranslate2", "base"), ("transformers", "tiny.en")]
AFTER = "speech after non-speech"  # the corpus's kind for its files with speech


def _handler(backend: str, model: str):
    from whisper_endpoint.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    return EndpointHandler(settings=ModelSettings(asr_model=f"embedded:{model}", asr_backend=backend))


def _invented(response: dict, speech: dict | None) -> list[str]:
    """The words of a response that lie outside the file's speech (all of them when it has none)."""
    words = response["chunks"]
    if speech is not None:
        low, high = speech["start"] - SLACK_S, speech["end"] + SLACK_S
        words = [w for w in words if w["timestamp"][1] < low or w["timestamp"][0] > high]
    return [w["text"].strip() for w in words if w["text"].strip()]


def corpus(backend: str, model: str) -> dict:
    from scripts.nonspeech_corpus import build

    handler = _handler(backend, model)
    rows = []
    for item in build():
        data = Path(item.path).read_bytes()
        row = {"file": item.name, "kind": item.kind, "seconds": item.seconds}
        for label, drop in (("before", False), ("after", True)):
            response = handler({"inputs": data, "parameters": {"return_timestamps": "word", "drop_non_speech": drop}})
            invented = _invented(response, item.speech)
            row[label] = {"words": len(invented), "text": " ".join(invented)[:200], "language": response["language"],
                          "language_probability": response.get("language_probability")}
        rows.append(row)
        print(f"{backend}/{model} {item.name}: {row['before']['words']} -> {row['after']['words']}", file=sys.stderr)
    summary = {
        label: {"files_without_invented_words": sum(r[label]["words"] == 0 for r in rows),
                "invented_words": sum(r[label]["words"] for r in rows),
                "non_speech_files_given_a_language": sum(r[label]["language"] is not None and r["kind"] != AFTER
                                                         for r in rows)}
        for label in ("before", "after")
    }
    return {"backend": backend, "model": model, "files": len(rows), **summary, "per_file": rows}


def vad_cost() -> dict:
    from faster_whisper import decode_audio

    from scripts.nonspeech_corpus import build
    from whisper_endpoint.backends.speech import find_speech

    audio_s = cpu_s = 0.0
    for item in build():
        samples = decode_audio(item.path)
        started = time.process_time()
        find_speech(samples)
        cpu_s += time.process_time() - started
        audio_s += len(samples) / 16000
    return {"audio_seconds": round(audio_s, 1), "vad_cpu_seconds": round(cpu_s, 2),
            "vad_cpu_percent_of_audio": round(100 * cpu_s / audio_s, 3)}


def _text_of(path: Path) -> str:
    turns = json.loads(path.with_suffix(".json").read_text())["turns"]
    return " ".join(turn["text"] for turn in turns)


def speech() -> dict:
    from scripts.metrics import cer, wer

    handler = _handler("ctranslate2", "base")
    refs = json.loads((AUDIO / "clips" / "refs.json").read_text())
    sets = {
        "clips": ([AUDIO / "clips" / r["file"] for r in refs], [r["text"] for r in refs], wer),
        "dialogues": (sorted((AUDIO / "dialogues").glob("*.flac")), None, wer),
        "long (untuned)": ([AUDIO / "long" / "fillets_long.flac"], None, wer),
        "ja CER (untuned)": ([AUDIO / "ja" / "kokoro_ja_meeting.flac"], None, cer),
    }
    out = {}
    for name, (paths, texts, metric) in sets.items():
        texts = texts or [_text_of(path) for path in paths]
        row = {"files": len(paths)}
        for label, drop in (("before", False), ("after", True)):
            started = time.process_time()
            responses = [handler({"inputs": p.read_bytes(), "parameters": {"drop_non_speech": drop}}) for p in paths]
            row[f"{label}_cpu_s"] = round(time.process_time() - started, 1)
            row[label] = round(100 * metric(texts, [r["text"] for r in responses]), 2)
            row[f"{label}_languages"] = sorted({r["language"] for r in responses})
        out[name] = row
        print(f"speech {name}: {row}", file=sys.stderr)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", choices=["corpus", "speech"], default=["corpus", "speech"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result: dict = {}
    if "corpus" in args.parts:
        result["vad_cost"] = vad_cost()
        result["corpus"] = [corpus(backend, model) for backend, model in RUNS]
    if "speech" in args.parts:
        result["speech"] = speech()
    text = json.dumps(result, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
