"""Words invented over non-speech, and what the gating costs speech: ``drop_non_speech`` false vs true.

    python -m evaluation nonspeech [--parts corpus speech] [--out results/nonspeech.json]

corpus: the files of support/nonspeech.py through the handler (ctranslate2 ``base``, the
multilingual model that names a language for noise, and the transformers backend with ``tiny.en``),
each file once with ``drop_non_speech: false`` (before) and once with the default (after), with word
timestamps: every word counts on the non-speech files, only the words outside the speech (more than
``SLACK_S`` away from it) on the files with speech. Also the VAD's CPU time per second of audio.

speech: WER (Whisper's BasicTextNormalizer) before and after, same run, ctranslate2 ``base``: the 30
clips (each decoded twice through the handler), the three dialogues, the 13.4 min file (long/) and CER
on the Japanese meeting (ja/), all over 30 s, so decoded once and filtered (see ``_decoded_once``). The
two last are untuned checks (audio/README.md): run once, never tuned on.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from support.paths import AUDIO

SLACK_S = 1.0  # Whisper's word times are loose by up to about a second at a speech edge
RUNS = [("ctranslate2", "base"), ("transformers", "tiny.en")]
AFTER = "speech after non-speech"  # the corpus's kind for its files with speech


def _handler(backend: str, model: str):
    from whisper_endpoint.core.config import ModelSettings
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
    from support.nonspeech import build

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

    from support.nonspeech import build
    from whisper_endpoint.asr.speech import find_speech

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


def _decoded_twice(handler, path: Path) -> tuple[str, str]:
    """The text before and after, each through the handler."""
    data = path.read_bytes()
    return tuple(handler({"inputs": data, "parameters": {"drop_non_speech": drop}})["text"] for drop in (False, True))


def _decoded_once(handler, path: Path) -> tuple[str, str]:
    """The text before and after from one decode: over ``chunk_length_s`` the batched path runs, whose
    language detection (on the VAD's speech) and decoding do not depend on ``drop_non_speech``, so the
    after is exactly the before's transcript through the filter (the VAD found speech in every file)."""
    from whisper_endpoint.asr.speech import find_speech
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import InferenceConfig
    from whisper_endpoint.pipeline.asr_step import keep_speech

    samples = decode_file(path.read_bytes(), max_seconds=3600).samples
    assert len(samples) > 30 * 16000, path
    before = handler.asr.transcribe(samples, InferenceConfig(drop_non_speech=False))
    after = keep_speech(before, find_speech(samples))
    return before.text, after.text


def speech() -> dict:
    from support.metrics import cer, wer

    handler = _handler("ctranslate2", "base")
    refs = json.loads((AUDIO / "clips" / "refs.json").read_text())
    sets = {
        "clips": ([AUDIO / "clips" / r["file"] for r in refs], [r["text"] for r in refs], wer, _decoded_twice),
        "dialogues": (sorted((AUDIO / "dialogues").glob("*.flac")), None, wer, _decoded_once),
        "long (untuned)": ([AUDIO / "long" / "fillets_long.flac"], None, wer, _decoded_once),
        "ja CER (untuned)": ([AUDIO / "ja" / "kokoro_ja_meeting.flac"], None, cer, _decoded_once),
    }
    out = {}
    for name, (paths, texts, metric, decode) in sets.items():
        texts = texts or [_text_of(path) for path in paths]
        started = time.process_time()
        pairs = [decode(handler, path) for path in paths]
        row = {"files": len(paths), "cpu_s": round(time.process_time() - started, 1),
               "decoded": "twice (handler)" if decode is _decoded_twice else "once, filtered after"}
        for index, label in enumerate(("before", "after")):
            row[label] = round(100 * metric(texts, [pair[index] for pair in pairs]), 2)
        row["texts_changed"] = sum(a != b for a, b in pairs)
        out[name] = row
        print(f"speech {name}: {row}", file=sys.stderr)
    return out


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("nonspeech")
    options.add_argument("--parts", nargs="+", choices=["corpus", "speech"], default=["corpus", "speech"])
    args = options.parse_args(argv)
    result: dict = {}
    if "corpus" in args.parts:
        result["vad_cost"] = vad_cost()
        result["corpus"] = [corpus(backend, model) for backend, model in RUNS]
    if "speech" in args.parts:
        result["speech"] = speech()
    print(json.dumps(result, indent=1, ensure_ascii=False))
    save("nonspeech", args.out, result, argv)
    return 0
