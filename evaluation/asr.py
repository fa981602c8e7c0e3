"""WER/CER through the handler vs faster-whisper called directly, same model and settings.

    python -m evaluation asr [--models tiny.en base] [--out results/asr.json]

English: the 30 clips of audio/clips (WER). Japanese: audio/ja (CER), and the
13.4 min Dutch audio/long (WER), multilingual models only.
Both sides decode greedily (beam 1) with int8 on CPU; the raw side uses faster-whisper's own
decoder and the same path the handler picks (sequential up to 30 s, batched beyond). Both pack the
speech found by the VAD into windows the same way; the handler then decodes again what a window
left out (see asr/long_form/windows.py).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from support.paths import AUDIO


def raw_transcribe(model_dir: Path, path: Path) -> str:
    from faster_whisper import BatchedInferencePipeline, WhisperModel, decode_audio

    model = _raw_models.setdefault(model_dir, WhisperModel(str(model_dir), device="cpu", compute_type="int8"))
    audio = decode_audio(str(path))
    if len(audio) > 30 * 16000:
        segments, _ = BatchedInferencePipeline(model).transcribe(
            audio, beam_size=1, batch_size=24, without_timestamps=False
        )
    else:
        segments, _ = model.transcribe(audio, beam_size=1)
    return "".join(segment.text for segment in segments).strip()


_raw_models: dict = {}


def evaluate(name: str) -> dict:
    from support.metrics import cer, wer
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.weights import embedded

    settings = ModelSettings(asr_model=f"embedded:{name}", max_batch_size=24)  # the raw pipeline's batch size
    handler = EndpointHandler(settings=settings)
    model_dir = embedded.assemble(embedded.MODELS[name], settings.model_cache_dir)
    refs = json.loads((AUDIO / "clips" / "refs.json").read_text())
    paths = [AUDIO / "clips" / item["file"] for item in refs]
    started = time.perf_counter()
    ours = [handler({"inputs": path.read_bytes()})["text"] for path in paths]
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    theirs = [raw_transcribe(model_dir, path) for path in paths]
    raw_s = time.perf_counter() - started
    texts = [item["text"] for item in refs]
    row = {
        "model": name,
        "clips_wer_handler": round(100 * wer(texts, ours), 2),
        "clips_wer_faster_whisper": round(100 * wer(texts, theirs), 2),
        "clips_identical_text": sum(a == b for a, b in zip(ours, theirs)),
        "clips_seconds_handler": round(ours_s, 1),
        "clips_seconds_faster_whisper": round(raw_s, 1),
    }
    if embedded.MODELS[name].multilingual:
        meeting = AUDIO / "ja" / "kokoro_ja_meeting.flac"
        reference = "".join(t["text"] for t in json.loads(meeting.with_suffix(".json").read_text())["turns"])
        greedy = {"beam_size": 1}  # as the raw side (long audio's default is a beam: compare_whisperx.py)
        ours_ja = handler({"inputs": meeting.read_bytes(), "parameters": greedy})
        row["ja_cer_handler"] = round(100 * cer([reference], [ours_ja["text"]]), 2)
        row["ja_cer_faster_whisper"] = round(100 * cer([reference], [raw_transcribe(model_dir, meeting)]), 2)
        row["ja_language_detected"] = ours_ja["language"]
        long = AUDIO / "long" / "fillets_long.flac"  # 13.4 min of Dutch: the batched windows at length
        reference = " ".join(t["text"] for t in json.loads(long.with_suffix(".json").read_text())["turns"])
        ours_long = handler({"inputs": long.read_bytes(), "parameters": greedy})["text"]
        row["long_wer_handler"] = round(100 * wer([reference], [ours_long]), 2)
        row["long_wer_faster_whisper"] = round(100 * wer([reference], [raw_transcribe(model_dir, long)]), 2)
    return row


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("asr")
    options.add_argument("--models", nargs="+", default=["tiny.en", "base"])
    args = options.parse_args(argv)
    rows = [evaluate(name) for name in args.models]
    print(json.dumps(rows, indent=2, ensure_ascii=False))
    save("asr", args.out, {"models": rows}, argv)
    return 0
