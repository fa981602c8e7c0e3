"""Rebuilds audio/mixed: bilingual and trilingual conversations (Dutch, Czech, English) from Fish Fillets NG.

    apt-get install -y sox flite fillets-ng-data fillets-ng-data-nl fillets-ng-data-cs
    python3 -m venv /tmp/gen-venv && /tmp/gen-venv/bin/pip install numpy soundfile
    /tmp/gen-venv/bin/python audio/generate/mixed.py [--out DIR]   # default: rewrite audio/mixed
    /tmp/gen-venv/bin/python audio/generate/mixed.py --check       # rebuild into a temp folder, compare

Each conversation is one Fish Fillets NG level's fish dialogue, in the order of its
``script/LEVEL/dialogs_en.lua``. Each game speaker (big fish, small fish) is given one language for the
whole conversation: ``nl`` is the Dutch voice actor (``fillets-ng-data-nl``, ``sound/LEVEL/nl/ID.ogg``,
text: ``dialogs_nl.lua``'s ``dialogStr``), ``cs`` the Czech voice actor (``fillets-ng-data-cs``,
``sound/LEVEL/cs/ID.ogg``, text: ``dialogs_cs.lua``'s ``dialogStr``), ``en:VOICE`` flite's voice VOICE
reading the line's English text (``dialogId``'s third argument). A line is kept when the language it is
given has a non-empty sound file (always, for flite). In the three-language conversations the small fish's
lines go to two people: the k-th run of consecutive small-fish lines to the first when k is even, to the
second when k is odd.

Every turn is trimmed, mixed to mono and resampled by ``build.sox_turn``; each speaker's turns are scaled
so that the speaker's RMS over all of its turns is -18 dBFS (the Dutch and Czech recordings and flite's
voices differ by up to 13 dB); ``build.assemble`` then joins them with ``uniform(0.25, 0.9)`` s gaps
(seeded) and levels the mix (two TPDF-dithered 16-bit stages, peak -3 dBFS), and ``build.write_dialogue``
writes ``NAME.flac``, ``NAME.rttm`` and ``NAME.json`` (per turn: speaker, language, start, end, text).
``manifest.json`` lists the files, their level, speakers, languages and set (``tune``, ``check`` or ``fresh``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import (AUDIO, FILLETS, FISH, Mix, assemble, compare_audio, compare_turns,  # noqa: E402
                   lua_string, sox_turn, write_dialogue)

GROUP = "mixed"
TARGET_DB = -18.0  # every speaker's RMS over its turns, before the mix is levelled
DOWN = 4  # build.assemble's first 16-bit stage at 1/DOWN of full scale
ACTORS = ("nl", "cs")


@dataclass(frozen=True)
class Conversation:
    name: str
    level: str
    set: str  # "tune", "check" (held out from tuning) or "fresh" (built after the rule was set)
    seed: int
    big: str  # role of the big fish's lines: "nl", "cs" or "en:VOICE"
    small: tuple[str, ...]  # role(s) of the small fish's lines (two: alternate by runs)


# Levels: none of alibaba, aztec, cellar, columns, computer, crabshow, engine, keys, magnet (kept apart)
# nor of those audio/dialogues and audio/long use.
CONVERSATIONS = [
    Conversation("mixed_nl_en_chest", "chest", "tune", 21, "nl", ("en:slt",)),
    Conversation("mixed_en_nl_dump", "dump", "tune", 22, "en:rms", ("nl",)),
    Conversation("mixed_cs_en_fdto", "fdto", "tune", 23, "cs", ("en:slt",)),
    Conversation("mixed_en_cs_grail", "grail", "tune", 24, "en:awb", ("cs",)),
    Conversation("mixed_nl_cs_wreck", "wreck", "tune", 25, "nl", ("cs",)),
    Conversation("mixed_cs_nl_labyrinth", "labyrinth", "tune", 26, "cs", ("nl",)),
    Conversation("mixed_nl_cs_en_cabin2", "cabin2", "tune", 27, "nl", ("cs", "en:awb")),
    Conversation("mixed_cs_nl_en_ufo", "ufo", "tune", 28, "cs", ("nl", "en:slt")),
    Conversation("mixed_cs_en_emulator", "emulator", "check", 29, "cs", ("en:slt",)),
    Conversation("mixed_en_nl_cs_propulsion", "propulsion", "check", 30, "en:rms", ("nl", "cs")),
    # Built after the voices' rule was set (issue 58), to check it once more on conversations it never saw.
    Conversation("mixed_nl_cs_en_pyramid", "pyramid", "fresh", 61, "nl", ("cs", "en:awb")),
    Conversation("mixed_cs_nl_en_reactor", "reactor", "fresh", 62, "cs", ("nl", "en:slt")),
    Conversation("mixed_en_cs_nl_viking1", "viking1", "fresh", 63, "en:rms", ("cs", "nl")),
    Conversation("mixed_cs_en_pearls", "pearls", "fresh", 64, "cs", ("en:slt",)),
    Conversation("mixed_en_nl_reef", "reef", "fresh", 65, "en:kal16", ("nl",)),
    Conversation("mixed_nl_cs_rush", "rush", "fresh", 66, "nl", ("cs",)),
    Conversation("mixed_nl_en_cs_turtle", "turtle", "fresh", 68, "nl", ("en:slt", "cs")),
]


# --- sources ---------------------------------------------------------------------------------------

_Q = r'"((?:[^"\\]|\\.)*)"'
_DIALOG = re.compile(rf"dialogId\(\s*{_Q}\s*,\s*{_Q}\s*,\s*{_Q}\s*\)(?:\s*dialogStr\(\s*{_Q}\s*\))?", re.S)


def game_lines(level: str) -> list[dict]:
    """The level's fish lines in dialogs_en.lua's order: id, speaker, text per language, sound per actor."""
    def parse(name: str) -> dict[str, tuple[str, str, str | None]]:
        script = (FILLETS / "script" / level / name).read_text(encoding="utf-8")
        return {m[1]: m.groups()[1:] for m in _DIALOG.finditer(script)}

    english = parse("dialogs_en.lua")
    local = {lang: parse(f"dialogs_{lang}.lua") for lang in ACTORS}
    lines = []
    for ident, (font, text, _) in english.items():
        if font not in FISH:
            continue
        line = {"id": ident, "speaker": FISH[font], "text": {"en": lua_string(text)}, "sound": {}}
        for lang in ACTORS:
            found = local[lang].get(ident)
            if found and found[2] is not None:
                line["text"][lang] = lua_string(found[2])
            sound = FILLETS / "sound" / level / lang / f"{ident}.ogg"
            if lang in line["text"] and sound.exists() and soundfile.info(str(sound)).frames > 0:
                line["sound"][lang] = sound
        lines.append(line)
    return lines


def role_label(fish: str, role: str) -> str:
    return f"flite_{role[3:]}" if role.startswith("en:") else f"{fish}_{role}"


def casting(conv: Conversation, lines: list[dict]) -> list[tuple[dict, str]]:
    """Each line with the role that says it (the small fish's runs alternate when it has two)."""
    cast, run, previous = [], -1, None
    for line in lines:
        if line["speaker"] == "small_fish" and previous != "small_fish":
            run += 1
        previous = line["speaker"]
        role = conv.big if line["speaker"] == "big_fish" else conv.small[run % len(conv.small)]
        cast.append((line, role))
    return cast


def spoken(line: dict, role: str, work: Path) -> tuple[str, str, np.ndarray] | None:
    """(language, text, 16 kHz samples) of the line in the role's language, None without a recording."""
    if role.startswith("en:"):
        raw = work / "flite.wav"
        subprocess.run(["flite", "-voice", role[3:], "-t", line["text"]["en"], "-o", str(raw)],
                       check=True, capture_output=True)
        return "en", line["text"]["en"], sox_turn(raw, work)
    if role not in line["sound"]:
        return None
    return role, line["text"][role], sox_turn(line["sound"][role], work)


def speaker_gains(turns: list[tuple[str, str, np.ndarray]]) -> list[float]:
    """Per turn: the gain that brings its speaker's RMS (over all of its turns) to TARGET_DB."""
    gain = {}
    for speaker in dict.fromkeys(s for s, _, _ in turns):
        samples = np.concatenate([x for s, _, x in turns if s == speaker])
        gain[speaker] = 10 ** (TARGET_DB / 20) / np.sqrt(np.mean(samples ** 2))
    return [gain[s] for s, _, _ in turns]


def build_conversation(conv: Conversation, out: Path, work: Path) -> dict:
    turns, languages = [], []
    for line, role in casting(conv, game_lines(conv.level)):
        said = spoken(line, role, work)
        if said is not None:
            turns.append((role_label(line["speaker"], role), said[1], said[2]))
            languages.append(said[0])
    mix = Mix(GROUP, conv.name, conv.seed, DOWN)
    samples, duration, truth = assemble(mix, turns, speaker_gains(turns))
    truth = [{"speaker": t["speaker"], "language": lang, "start": t["start"], "end": t["end"], "text": t["text"]}
             for t, lang in zip(truth, languages)]
    write_dialogue(mix, out, samples, duration, truth)
    speakers = {role_label(fish, role): role[:2] for fish, roles in (("big_fish", (conv.big,)),
                ("small_fish", conv.small)) for role in roles}
    return {"file": f"{conv.name}.flac", "set": conv.set, "level": conv.level,
            "languages": list(dict.fromkeys(speakers.values())), "speakers": speakers,
            "duration": duration, "turns": len(truth)}


def build(out: Path) -> None:
    missing = [tool for tool in ("sox", "flite") if not shutil.which(tool)]
    needs = [(FILLETS / "script/chest/dialogs_cs.lua", "fillets-ng-data"),
             (FILLETS / "sound/chest/nl", "fillets-ng-data-nl"), (FILLETS / "sound/chest/cs", "fillets-ng-data-cs")]
    missing += [package for path, package in needs if not path.exists()]
    if missing:
        sys.exit("needs the Debian packages: " + " ".join(missing))
    with tempfile.TemporaryDirectory() as work:
        files = [build_conversation(conv, out, Path(work)) for conv in CONVERSATIONS]
    manifest = {"about": "Mixed-language conversations (see README.md); set 'check' is held out from tuning.",
                "files": files}
    (out / GROUP / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")


def check() -> int:
    with tempfile.TemporaryDirectory() as temp:
        out = Path(temp)
        build(out)
        print(f"\n{'file':40} {'dur ms':>8} {'corr':>8} {'SNR dB':>7}  {'turns':>7} {'labels':>6} {'bound ms':>8}  "
              f"{'json':>9} {'rttm':>9}")
        for ours in sorted((out / GROUP).glob("*.flac")):
            theirs = AUDIO / GROUP / ours.name
            if not theirs.exists():
                print(f"{ours.name:40} not committed")
                continue
            a, t = compare_audio(ours, theirs), compare_turns(ours.with_suffix(".json"), theirs.with_suffix(".json"))
            print(f"{ours.name:40} {a['dur_ms']:+8.2f} {a['corr']:.6f} {a['snr']:7.1f}  {t['turns']:>7} "
                  f"{t['labels']:>6} {t['bound_ms']:8.1f}  {t['json']:>9} {t['rttm']:>9}")
        same = (out / GROUP / "manifest.json").read_bytes() == (AUDIO / GROUP / "manifest.json").read_bytes()
        print("manifest.json", "identical" if same else "differs")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=AUDIO, help="folder to write mixed/ into (default: audio/)")
    parser.add_argument("--check", action="store_true", help="rebuild into a temporary folder and compare")
    args = parser.parse_args()
    if args.check:
        return check()
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
