"""Proof that a refactor changed nothing: a fixed set of requests, their full JSON responses, byte for byte.

    python -m evaluation responses --out DIR        # record, before the change
    python -m evaluation responses --against DIR    # after it: compare; exit 1 naming what differs

The requests run through ``EndpointHandler`` on the repository's own audio, on tiny.en (CTranslate2) with
and without the embedded diarization, and on the multilingual base model: a two-language conversation with
its language unset (a language per stretch, and per voice when diarized) and a window judged failed and
decoded again (a phrase said ten times), with word times. On tiny.en: mono, word timestamps with confidence, segments with confidence,
diarized (speaker turns, words), known speakers (with embeddings), multichannel (plain and diarized), no
speech (silence, noise, diarized silence), speaker options on an endpoint without diarization, warnings
from several steps (a speaker count the diarizer cannot reach, dual mono channels), and a request's
progress reports (``DecodeContext`` listeners), mono and multichannel. Each response is written
as ``NAME.json`` with sorted keys; the comparison is of those bytes. CPU only, a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from support.audio import pcm16_wav

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "audio"
CLIPS = AUDIO / "clips"
MEETING = AUDIO / "dialogues" / "flite_meeting.flac"  # slt 0.3-5.1 s, rms 5.9-11.5 s, slt 12.2-15.2 s, ...
RATE = 16000
MEETING_S = 16.0  # three turns, two speakers
AGENT, CALLER = "asterisk_all-circuits-busy-now.flac", "asterisk_vm-next.flac"
MIXED = AUDIO / "mixed" / "mixed_nl_cs_rush.flac"  # 47.6 s, a Dutch and a Czech voice


def _samples(path: Path, start_s: float = 0.0, end_s: float | None = None) -> np.ndarray:
    from whisper_endpoint.audio.decode import decode_file

    samples = decode_file(path.read_bytes(), max_seconds=3600).samples
    return samples[round(start_s * RATE): None if end_s is None else round(end_s * RATE)]


def _call() -> np.ndarray:
    """The agent on channel 0 from 0 s, the caller on channel 1 from 1 s (overlapping), 6 s."""
    agent, caller = _samples(CLIPS / AGENT), _samples(CLIPS / CALLER)
    length = 6 * RATE
    channels = np.zeros((2, length), np.float32)
    channels[0, : min(length, len(agent))] = agent[:length]
    channels[1, RATE: RATE + len(caller)] = caller[: length - RATE]
    return channels


def _said_ten_times() -> np.ndarray:
    """One phrase said ten times, 0.3 s apart (32 s): its first window is judged failed (it compresses
    too well) and decoded again."""
    phrase = _samples(CLIPS / CALLER)
    return np.tile(np.concatenate([phrase, np.zeros(round(0.3 * RATE), np.float32)]), 10)


def requests() -> dict[str, tuple[str, dict]]:
    """name: (handler, request)."""
    clip = (CLIPS / AGENT).read_bytes()
    meeting = _samples(MEETING, 0.0, MEETING_S)
    stereo = pcm16_wav(_call())
    dual_mono = pcm16_wav(np.stack([_call()[0]] * 2))
    noise = np.random.default_rng(0).normal(0, 0.05, 4 * RATE).astype(np.float32)
    silence = pcm16_wav(np.zeros(4 * RATE, np.float32))
    # Known voices cut from later in the meeting (not in the 16 s transcribed).
    turns = json.loads(MEETING.with_suffix(".json").read_text())["turns"]
    later = {}
    for turn in turns:
        if turn["start"] >= MEETING_S and turn["speaker"] not in later and turn["end"] - turn["start"] >= 2.5:
            later[turn["speaker"]] = _samples(MEETING, turn["start"], turn["end"])
    import base64

    known = [{"name": name, "audio": base64.b64encode(pcm16_wav(samples)).decode()}
             for name, samples in sorted(later.items())]
    words = {"return_timestamps": "word"}
    return {
        "mono": ("plain", {"inputs": clip}),
        "mono_unknown_parameter": ("plain", {"inputs": clip, "parameters": {"no_such_option": 1}}),
        "words_confidence": ("plain", {"inputs": clip, "parameters": {**words, "return_confidence": True}}),
        "segments_confidence": ("plain", {"inputs": clip, "parameters": {"return_confidence": True}}),
        "no_timestamps": ("plain", {"inputs": clip, "parameters": {"return_timestamps": "none"}}),
        "speaker_options_without_diarizer": ("plain", {"inputs": clip, "parameters": {
            "diarize": True, "num_speakers": 2, "return_speaker_turns": True}}),
        "silence": ("plain", {"inputs": silence}),
        "noise": ("plain", {"inputs": {"array": noise.tolist(), "sampling_rate": RATE}}),
        "silence_kept": ("plain", {"inputs": silence, "parameters": {"drop_non_speech": False}}),
        "multichannel": ("plain", {"inputs": stereo, "parameters": {
            "multichannel": True, "channel_names": ["agent", "caller"], **words, "return_speaker_turns": True,
            "return_speaker_words": True, "return_confidence": True}}),
        "multichannel_segments": ("plain", {"inputs": stereo, "parameters": {"multichannel": True}}),
        "multichannel_diarize_ignored": ("plain", {"inputs": stereo, "parameters": {
            "multichannel": True, "diarize_channels": True}}),
        "diarized": ("diarizing", {"inputs": pcm16_wav(meeting), "parameters": {
            "return_speaker_turns": True, "return_speaker_words": True}}),
        "diarized_segments_confidence": ("diarizing", {"inputs": pcm16_wav(meeting), "parameters": {
            "return_confidence": True, "num_speakers": 2}}),
        "diarized_silence": ("diarizing", {"inputs": silence, "parameters": {"return_speaker_turns": True}}),
        "known_speakers": ("diarizing", {"inputs": pcm16_wav(meeting), "parameters": {
            "known_speakers": known, "return_speaker_embeddings": True, "return_speaker_turns": True}}),
        "multichannel_diarized": ("diarizing", {"inputs": stereo, "parameters": {
            "multichannel": True, "diarize_channels": True, "return_speaker_turns": True, **words}}),
        # Warnings from several steps at once: the diarizer's (a speaker count it cannot reach) and the
        # channels' (dual mono), each said once.
        "diarized_min_speakers": ("diarizing", {"inputs": pcm16_wav(meeting), "parameters": {"min_speakers": 4}}),
        "multichannel_dual_mono_diarized": ("diarizing", {"inputs": dual_mono, "parameters": {
            "multichannel": True, "diarize_channels": True, "min_speakers": 3, "no_such_option": 1}}),
        # The multilingual model: languages per stretch and per voice, a window decoded again, word times.
        "base_mixed": ("base", {"inputs": MIXED.read_bytes(), "parameters": words}),
        "base_mixed_diarized": ("base_diarizing", {"inputs": MIXED.read_bytes(), "parameters": {
            **words, "return_speaker_turns": True, "return_speaker_words": True}}),
        "base_window_decoded_again": ("base", {"inputs": pcm16_wav(_said_ten_times()), "parameters": {
            **words, "return_confidence": True}}),
    }


PROGRESS = ("mono", "multichannel", "diarized", "base_mixed_diarized")  # also run through handler.run with a listener


def _progress(handler, data: dict) -> dict:
    from whisper_endpoint.handler import DecodeContext

    seen = []
    context = DecodeContext(listeners=(lambda p: seen.append(
        {**p.public(), "segments": [[s.start, s.end, s.text] for s in p.segments]}),))
    return {"response": handler.run(data, context), "progress": seen}


def _handlers() -> dict:
    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler

    cache = Path(os.environ.get("TEST_MODEL_CACHE", Path.home() / ".cache" / "whisper-endpoint"))
    plain = EndpointHandler(settings=ModelSettings(model_cache_dir=cache, asr_model="embedded:tiny.en"))
    diarizing = EndpointHandler(settings=ModelSettings(
        model_cache_dir=cache, asr_model="embedded:tiny.en", diarization_model="embedded"))
    base = EndpointHandler(settings=ModelSettings(model_cache_dir=cache, asr_model="embedded:base"))
    base_diarizing = EndpointHandler(settings=ModelSettings(
        model_cache_dir=cache, asr_model="embedded:base", diarization_model="embedded"))
    return {"plain": plain, "diarizing": diarizing, "base": base, "base_diarizing": base_diarizing}


def _text(value) -> str:
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def record() -> dict[str, str]:
    handlers = _handlers()
    out = {}
    for name, (which, data) in requests().items():
        out[name] = _text(handlers[which](data))
        if name in PROGRESS:
            out[f"{name}_progress"] = _text(_progress(handlers[which], data))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation responses", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder to write NAME.json into (a baseline, kept outside results/)")
    parser.add_argument("--against", type=Path, help="folder of a previous run to compare with, byte for byte")
    args = parser.parse_args(argv)
    if not (args.out or args.against):
        parser.error("give --out DIR (record) or --against DIR (compare), or both")
    responses = record()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in responses.items():
            (args.out / f"{name}.json").write_text(text, encoding="utf-8")
        print(f"{len(responses)} responses written to {args.out}")
    if not args.against:
        return 0
    recorded = {path.stem: path.read_text(encoding="utf-8") for path in args.against.glob("*.json")}
    differ = sorted(name for name in responses.keys() & recorded.keys() if responses[name] != recorded[name])
    missing, extra = sorted(recorded.keys() - responses.keys()), sorted(responses.keys() - recorded.keys())
    for name in differ:
        print(f"DIFFERS: {name}")
    for name in missing:
        print(f"NOT RUN NOW: {name}")
    for name in extra:
        print(f"NOT IN {args.against}: {name}")
    if differ or missing or extra:
        return 1
    print(f"identical: {len(responses)} responses, byte for byte, to {args.against}")
    return 0
