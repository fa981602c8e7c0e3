"""The transformers backend on converted weights, against faster-whisper and the raw pipeline.

    python -m evaluation transformers [--models tiny.en base] [--out results/transformers.json]

For each model, on the 30 clips of audio/clips, greedy (beam 1), no timestamps, fp32 CPU:
- the handler with ASR_BACKEND=transformers (converted weights, faster-whisper's feature padding);
- faster-whisper on the original CTranslate2 weights (float32): same text expected;
- the raw transformers pipeline on the converted weights with its stock feature extractor, and the
  handler with that stock extractor swapped in (what the handler changes besides the features).
Then long audio (the 30 clips joined with 1 s pauses, ~2.6 min) through the handler: its CPU
default, the windows of packed speech one at a time (as the CTranslate2 backend's windows); its CUDA
default, the same windows in batches of 4, run here on the CPU, with segment and with word timestamps
(word timestamps run on eager attention); and the raw pipeline's long-form ``generate``.

Speculative decoding with real weights: the model assisting itself (``ASSISTANT_MODEL`` the same embedded
model: every draft accepted, so no faster, but every token still verified), greedy without timestamps,
on the clips, the long audio and, for base, the loops evaluation's files and the mixed-language check
set: the assisted text must be the model's own.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CLIPS = ROOT / "audio" / "clips"
# Long files for the assisted check: the loops evaluation's and the mixed-language check set's.
LONG_FILES = [*(f"stress/{p.stem}" for p in sorted((ROOT / "audio" / "stress").glob("*.flac"))),
              "dialogues/fillets_barrel", "dialogues/fillets_cave", "dialogues/flite_meeting",
              "mixed/mixed_cs_en_emulator", "mixed/mixed_en_nl_cs_propulsion"]


def _timed(fn, items):
    started = time.perf_counter()
    return [fn(item) for item in items], round(time.perf_counter() - started, 1)


def evaluate(name: str) -> dict:
    from faster_whisper import WhisperModel
    from transformers import WhisperFeatureExtractor, pipeline

    from support.metrics import wer
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.weights import embedded
    from whisper_endpoint.weights.convert import converted_model_dir

    settings = ModelSettings(asr_model=f"embedded:{name}", asr_backend="transformers")
    handler = EndpointHandler(settings=settings)
    ct2_dir = embedded.assemble(embedded.MODELS[name], settings.model_cache_dir)
    converted = converted_model_dir(ct2_dir, settings.model_cache_dir)
    refs = json.loads((CLIPS / "refs.json").read_text())
    truth = [item["text"] for item in refs]
    audio = [decode_file((CLIPS / item["file"]).read_bytes(), max_seconds=60).samples for item in refs]
    params = {"return_timestamps": "none", "beam_size": 1}

    ours, ours_s = _timed(lambda a: handler({"inputs": {"array": a, "sampling_rate": 16000},
                                             "parameters": params})["text"], audio)
    # The same handler with transformers' stock feature extractor: isolates what the handler itself changes.
    tuned_features = handler.asr.pipe.feature_extractor
    handler.asr.pipe.feature_extractor = WhisperFeatureExtractor.from_pretrained(converted)
    stock, stock_s = _timed(lambda a: handler({"inputs": {"array": a, "sampling_rate": 16000},
                                               "parameters": params})["text"], audio)
    handler.asr.pipe.feature_extractor = tuned_features
    fw = WhisperModel(str(ct2_dir), device="cpu", compute_type="float32")
    theirs, fw_s = _timed(
        lambda a: "".join(s.text for s in fw.transcribe(a, beam_size=1, without_timestamps=True)[0]).strip(), audio
    )
    raw_pipe = pipeline("automatic-speech-recognition", model=str(converted), device="cpu")
    raw, raw_s = _timed(lambda a: raw_pipe(a.copy(), generate_kwargs={"num_beams": 1})["text"].strip(), audio)

    joined = np.concatenate([np.concatenate([a, np.zeros(16000, np.float32)]) for a in audio])
    long_truth = [" ".join(truth)]

    def handler_long(params, batched: bool):
        handler.asr._batches_pay = lambda: batched
        try:
            return handler({"inputs": {"array": joined, "sampling_rate": 16000}, "parameters": params})["text"]
        finally:
            del handler.asr._batches_pay  # back to the class's own rule

    long_params = {"beam_size": 1, "batch_size": 4, "return_timestamps": "segment"}
    (long_form,), long_form_s = _timed(lambda p: handler_long(p, batched=False), [long_params])
    (chunked,), chunked_s = _timed(lambda p: handler_long(p, batched=True), [long_params])
    (chunked_words,), chunked_words_s = _timed(
        lambda p: handler_long(p, batched=True), [{**long_params, "return_timestamps": "word"}]
    )
    assisted = _assisted(name, audio, joined)
    (raw_long,), raw_long_s = _timed(
        lambda a: raw_pipe(a.copy(), return_timestamps=True, generate_kwargs={"num_beams": 1})["text"], [joined]
    )
    return {
        "model": name,
        "clips_identical_handler_vs_faster_whisper": sum(a == b for a, b in zip(ours, theirs)),
        "clips_identical_raw_pipeline_vs_faster_whisper": sum(a == b for a, b in zip(raw, theirs)),
        "clips_wer_handler_transformers": round(100 * wer(truth, ours), 2),
        "clips_wer_raw_pipeline": round(100 * wer(truth, raw), 2),
        "clips_wer_handler_stock_features": round(100 * wer(truth, stock), 2),
        "clips_identical_handler_stock_features_vs_raw_pipeline": sum(a == b for a, b in zip(stock, raw)),
        "clips_wer_faster_whisper_fp32": round(100 * wer(truth, theirs), 2),
        "clips_seconds": {"handler_transformers": ours_s, "handler_stock_features": stock_s, "raw_pipeline": raw_s, "faster_whisper_fp32": fw_s},
        "long_seconds_audio": round(len(joined) / 16000, 1),
        "long_wer": {
            "handler_windows": round(100 * wer(long_truth, [long_form]), 2),
            "handler_windows_batch4": round(100 * wer(long_truth, [chunked]), 2),
            "handler_windows_batch4_word_timestamps": round(100 * wer(long_truth, [chunked_words]), 2),
            "raw_pipeline_long_form": round(100 * wer(long_truth, [raw_long]), 2),
        },
        "long_seconds": {
            "handler_windows": long_form_s,
            "handler_windows_batch4": chunked_s,
            "handler_windows_batch4_word_timestamps": chunked_words_s,
            "raw_pipeline_long_form": raw_long_s,
        },
        "assisted": assisted,
    }


def _assisted(name: str, clips: list, joined) -> dict:
    """The model assisting itself: assisted and unassisted texts, greedy without timestamps, on the clips,
    the joined clips and (multilingual models) the long files of the loops and mixed-language checks."""
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    handler = EndpointHandler(settings=ModelSettings(asr_model=f"embedded:{name}", asr_backend="transformers",
                                                     assistant_model=f"embedded:{name}"))
    longs = {"joined clips": joined}
    if handler.asr.is_multilingual:
        longs |= {stem: decode_file((ROOT / "audio" / f"{stem}.flac").read_bytes(), max_seconds=3600).samples
                  for stem in LONG_FILES}

    def text(audio, assisted: bool) -> str:
        found = handler({"inputs": {"array": audio, "sampling_rate": 16000},
                         "parameters": {"return_timestamps": "none", "beam_size": 1, "assisted": assisted}})
        assert found["decoding"]["assisted"] == assisted
        return found["text"]

    seconds, texts = {}, {}
    for label, items in (("clips", clips), *((stem, [audio]) for stem, audio in longs.items())):
        for assisted in (False, True):
            started = time.process_time()
            texts[label, assisted] = [text(audio, assisted) for audio in items]
            seconds[f"{label}{' assisted' if assisted else ''}"] = round(time.process_time() - started, 1)
    return {"assistant": f"embedded:{name} (itself)",
            "clips_identical": sum(a == b for a, b in zip(texts["clips", False], texts["clips", True])),
            "clips": len(clips),
            "long_identical": {stem: texts[stem, False] == texts[stem, True] for stem in longs},
            "cpu_s": seconds}


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("transformers")
    options.add_argument("--models", nargs="+", default=["tiny.en", "base"])
    args = options.parse_args(argv)
    rows = [evaluate(name) for name in args.models]
    print(json.dumps(rows, indent=2))
    save("transformers", args.out, {"models": rows}, argv)
    return 0
