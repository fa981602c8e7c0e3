"""One speaker per channel: multichannel transcription vs down-mix + embedded diarization, same audio.

    python -m evaluation multichannel [--out results/multichannel.json] [--files NAME ...]
                                                     [--crosstalk-db -25] [--threads 1] [--table]

For each dev dialogue (fillets_barrel, fillets_cave, flite_meeting; the files the project tunes on) a
multichannel WAV is built from its reference turns: each speaker's turns on their own channel (the
original audio inside the speaker's turns, silence elsewhere), plus the other channels' speech mixed in
at ``--crosstalk-db`` (-25 dB: what a headset or a phone line leaks). The same file then goes through
one handler (embedded:base, CTranslate2, the file's language given, DIARIZATION_MODEL=embedded) twice:

- multichannel: ``multichannel: true`` (each channel transcribed on its own, no diarization);
- down-mix: the handler's default (FFmpeg's down-mix, then the embedded diarization);
- ablation: multichannel without muting the leaks (``crosstalk.gate_crosstalk`` replaced by nothing).

Scores against the dialogue's JSON: cpWER (each speaker's words concatenated, best speaker pairing),
the WER with speakers ignored (the ASR's own share), and the process CPU time of each request.
"""

from __future__ import annotations

import json
import os
import time
from unittest import mock

import numpy as np

from support.audio import pcm16_wav

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from support.paths import AUDIO  # noqa: E402

# name: language (the dev dialogues only: nothing here is tuned, and the held-out files stay held out)
FILES = {"fillets_barrel": "nl", "fillets_cave": "nl", "flite_meeting": "en"}
RATE = 16000


def channels_from_turns(samples: np.ndarray, turns: list[dict], crosstalk_db: float) -> tuple[list[str], np.ndarray]:
    """(speakers in order of first turn, channels x samples): each speaker's turns on their own channel,
    the other channels leaking in at ``crosstalk_db``."""
    speakers = list(dict.fromkeys(turn["speaker"] for turn in turns))
    own = np.zeros((len(speakers), len(samples)), np.float32)
    for turn in turns:
        start, end = int(turn["start"] * RATE), int(turn["end"] * RATE)
        own[speakers.index(turn["speaker"]), start:end] = samples[start:end]
    leak = 10 ** (crosstalk_db / 20)
    return speakers, own + leak * (own.sum(axis=0, keepdims=True) - own)


def timed(handler, data: bytes, parameters: dict) -> tuple[dict, float]:
    started = time.process_time()
    result = handler({"inputs": data, "parameters": parameters})
    return result, time.process_time() - started


def score(truth_turns: list[dict], result: dict) -> dict:
    from evaluation.speaker_attribution import said
    from support.metrics import cp_wer, tcp_wer, wer

    truth, found = said(truth_turns), said(result["speakers"])
    return {
        "cpwer": round(100 * cp_wer(truth, found), 2),
        "tcpwer": round(100 * tcp_wer(truth, found), 2),
        "wer_speakers_ignored": round(100 * wer([" ".join(t["text"] for t in truth_turns)], [result["text"]]), 2),
        "speakers_found": len({entry["speaker"] for entry in result["speakers"]}),
    }


def evaluate(names: list[str], crosstalk_db: float, threads: int) -> dict:
    import torch

    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    torch.set_num_threads(threads)  # one thread each: CPU seconds without the spin of threads waiting
    settings = ModelSettings(asr_model="embedded:base", diarization_model="embedded", cpu_threads=threads)
    handler = EndpointHandler(settings=settings)
    rows = {}
    for name in names:
        path = AUDIO / "dialogues" / f"{name}.flac"
        truth = json.loads(path.with_suffix(".json").read_text())["turns"]
        samples = decode_file(path.read_bytes(), max_seconds=4 * 3600).samples
        speakers, channels = channels_from_turns(samples, truth, crosstalk_db)
        data = pcm16_wav(channels)
        language = FILES[name]
        parameters = {"language": language, "multichannel": True, "channel_names": speakers}
        multi, multi_cpu = timed(handler, data, parameters)
        mixed, mixed_cpu = timed(handler, data, {"language": language})
        with mock.patch("whisper_endpoint.multichannel.channels.gate_crosstalk", lambda channels: channels):  # the ablation
            ungated, ungated_cpu = timed(handler, data, parameters)
        rows[name] = {
            "duration_s": round(len(samples) / RATE, 1),
            "channels": len(speakers),
            "multichannel": {**score(truth, multi), "cpu_s": round(multi_cpu, 1)},
            "downmix_diarization": {**score(truth, mixed), "cpu_s": round(mixed_cpu, 1)},
            "multichannel_without_leak_gate": {**score(truth, ungated), "cpu_s": round(ungated_cpu, 1)},
            "cpu_ratio_multichannel_vs_downmix": round(multi_cpu / mixed_cpu, 2),
        }
        print(name, json.dumps(rows[name]), flush=True)
    return {
        "audio": f"each speaker's reference turns on their own channel, the others leaking in at {crosstalk_db:g} dB; "
                 "16-bit WAV",
        "asr": "embedded:base, ctranslate2 (default compute type), the file's language given",
        "downmix": "the handler's default FFmpeg down-mix + DIARIZATION_MODEL=embedded (default settings)",
        "metrics": "cpWER and WER (speakers ignored) in %, BasicTextNormalizer; process CPU seconds per request",
        "crosstalk_db": crosstalk_db,
        "threads": threads,
        "files": rows,
    }


def markdown_table(result: dict) -> str:
    lines = ["| file | channels | cpWER multichannel | cpWER down-mix + diarization | WER, speakers ignored "
             "(multichannel / down-mix) | CPU s multichannel / down-mix (ratio) | cpWER multichannel, leaks kept |",
             "|---|---|---|---|---|---|---|"]
    for name, row in result["files"].items():
        multi, mixed = row["multichannel"], row["downmix_diarization"]
        lines.append(
            f"| {name} ({row['duration_s']:.0f} s) | {row['channels']} | {multi['cpwer']:.2f}% | {mixed['cpwer']:.2f}% "
            f"| {multi['wer_speakers_ignored']:.2f}% / {mixed['wer_speakers_ignored']:.2f}% "
            f"| {multi['cpu_s']:.1f} / {mixed['cpu_s']:.1f} ({row['cpu_ratio_multichannel_vs_downmix']:.2f}) "
            f"| {row['multichannel_without_leak_gate']['cpwer']:.2f}% |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("multichannel")
    options.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    options.add_argument("--crosstalk-db", type=float, default=-25.0)
    options.add_argument("--threads", type=int, default=1, help="CPU threads of the ASR and of torch")
    options.add_argument("--table", action="store_true", help="print the table of an existing --out file and stop")
    args = options.parse_args(argv)
    if args.table:
        print(markdown_table(json.loads(args.out.read_text())))
        return 0
    result = evaluate(args.files, args.crosstalk_db, args.threads)
    save("multichannel", args.out, result, argv)
    print(markdown_table(result))
    return 0
