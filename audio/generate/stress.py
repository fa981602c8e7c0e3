"""Rebuilds audio/stress: long files that tempt Whisper into repetition loops (see audio/stress/README.md).

    apt-get install -y sox flite fillets-ng-data fillets-ng-data-nl fillets-ng-data-cs
    python3 -m venv /tmp/gen-venv && /tmp/gen-venv/bin/pip install numpy soundfile
    /tmp/gen-venv/bin/python audio/generate/stress.py [--out DIR]   # default: rewrite audio/stress
    /tmp/gen-venv/bin/python audio/generate/stress.py --check       # rebuild into a temp folder, compare

What makes them hard, all of it ordinary speech: turns that follow each other with 0.05-0.2 s of silence
(mostly below the 160 ms pause the product's voice-activity detector cuts at, so a 30 s window is one long
run of speech), repeated phrases, lists (items, counts, order numbers, read-backs), fast speech (sox
``tempo -s 1.3``), quiet passages (turns 20-30 dB below the rest) and, in one file, two languages.

- Dutch dialogues: Fish Fillets NG's Dutch voice actors (``fillets-ng-data-nl``), every fish line of the
  levels in their ``dialogs_nl.lua`` order, as ``build.fillets_dialogues`` lists them (text: the Dutch
  subtitle, which may differ slightly from the spoken words); ``keep`` cuts a file after its first N turns.
- Code-switching: the levels' lines cast as in ``mixed.py`` (``mixed.casting`` and ``mixed.spoken``): the
  big fish's lines by the Czech actor (``fillets-ng-data-cs``), the small fish's read by flite in English.
- English: texts written for these files (below), spoken by flite's voices at their default rate.

No level of audio/dialogues, audio/long or audio/mixed, nor alibaba, aztec, cellar, columns, computer,
crabshow, engine, keys, magnet. Every turn is trimmed, mixed to mono and resampled by ``build.sox_turn``
(after ``tempo`` for the fast ones, written as float so that sox does not dither it); each speaker's turns
are scaled to -18 dBFS RMS over all of its turns (``mixed.speaker_gains``), the quiet turns then by their
own gain; ``assemble_close`` is ``build.assemble`` with these shorter gaps (same seeded timing, same
levelling: two TPDF-dithered 16-bit stages, peak -3 dBFS), and ``build.write_dialogue`` writes the files;
the ``.json`` gives per turn: speaker, language, start, end, text (and ``gain_db`` / ``tempo`` where a
turn has them). ``manifest.json`` lists the files, the language to ask for and the languages spoken.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import (AUDIO, FILLETS, RATE, Mix, compare_audio, compare_turns, dithered,  # noqa: E402
                   fillets_dialogues, sox_turn, write_dialogue)
from mixed import Conversation, casting, game_lines, role_label, speaker_gains, spoken  # noqa: E402

GROUP = "stress"
DOWN = 4  # first 16-bit stage at 1/DOWN of full scale
FAST = 1.3  # sox tempo of the fast turns


@dataclass(frozen=True)
class Stress:
    name: str
    seed: int
    language: str  # the language to ask for (the file's first speaker's)
    levels: tuple[str, ...] = ()  # Dutch and code-switching: Fish Fillets levels, in this order
    script: tuple = ()  # English: (voice, text, flags) with flags a string of "f" (fast) and/or "q" (quiet)
    gap: tuple[float, float] = (0.05, 0.2)
    fast: str = "none"  # Dutch: "none", "all"
    quiet: tuple[int, int] = (0, 0)  # Dutch: blocks of N turns, every M-th block quiet (0: none)
    keep: int = 0  # only the first N turns (0: all)
    cast: tuple = ()  # code-switching: (big fish's role, small fish's roles) as in mixed.py ("nl", "en:slt", ...)
    notes: str = ""


# --- English texts (ours) ----------------------------------------------------------------------------

INVENTORY = (
    ("rms", "Good afternoon everyone. Before we close the quarter, I will read out the full stock count for the "
            "north warehouse, aisle by aisle, so please check the numbers against your own sheets as I go.", ""),
    ("rms", "Aisle one. Twelve boxes of wood screws. Twelve boxes of machine screws. Twelve boxes of drywall "
            "screws. Eight boxes of nails. Eight boxes of finishing nails. Six boxes of washers. Six boxes of lock "
            "washers. Four boxes of hex bolts. Four boxes of carriage bolts. Four boxes of anchor bolts.", ""),
    ("rms", "Aisle two. Ten rolls of duct tape. Ten rolls of masking tape. Ten rolls of electrical tape. Nine "
            "tubes of silicone. Nine tubes of wood glue. Nine tubes of construction adhesive. Seven cans of spray "
            "paint in white, seven in black, seven in grey, and seven in red.", ""),
    ("rms", "Now the order numbers that are still open. Order four five one two. Order four five one three. "
            "Order four five one four. Order four five one five. Order four five one six. Order four five one "
            "seven. Order four five one eight. Order four five one nine. Order four five two zero.", ""),
    ("rms", "Let me count the pallets in the loading bay. One, two, three, four, five, six, seven, eight, nine, "
            "ten, eleven, twelve, thirteen, fourteen, fifteen, sixteen, seventeen, eighteen, nineteen, twenty. "
            "Twenty pallets in total.", ""),
    ("rms", "The delivery schedule for next week is as follows. Monday, two trucks in the morning and one truck "
            "in the afternoon. Tuesday, two trucks in the morning and one truck in the afternoon. Wednesday, two "
            "trucks in the morning and one truck in the afternoon. Thursday, one truck in the morning only. "
            "Friday, no trucks at all.", ""),
    ("rms", "Please repeat after me when you confirm. Aisle one confirmed. Aisle two confirmed. Loading bay "
            "confirmed. Open orders confirmed. Delivery schedule confirmed. Phone numbers confirmed.", ""),
    ("rms", "The phone numbers for the suppliers are five five five, zero one nine eight, for screws and bolts; "
            "five five five, zero one nine nine, for tapes and glue; five five five, zero two zero zero, for "
            "garden supplies; and five five five, zero two zero one, for lighting.", ""),
    ("rms", "To sum up, the counts match last month's counts in every aisle except aisle two, where we are "
            "short of two rolls of masking tape. Thank you all, and see you next Monday at nine.", ""),
)

READBACK = (
    ("slt", "Speedbird four two seven, good morning, radar contact, climb flight level one two zero, turn left "
            "heading two seven zero.", ""),
    ("awb", "Climb flight level one two zero, turn left heading two seven zero, Speedbird four two seven.", "f"),
    ("slt", "Speedbird four two seven, correction, climb flight level one one zero, I say again, flight level "
            "one one zero.", ""),
    ("awb", "Flight level one one zero, I say again, flight level one one zero, Speedbird four two seven.", "f"),
    ("slt", "Speedbird four two seven, contact London on one three two decimal eight, good day.", ""),
    ("awb", "One three two decimal eight, Speedbird four two seven, good day.", "f"),
    ("slt", "Okay, now the hotel booking. Can you give me the reference again, slowly please?", ""),
    ("awb", "Yes. The reference is alpha, alpha, seven, seven, bravo, bravo, three, three. Alpha, alpha, seven, "
            "seven, bravo, bravo, three, three.", ""),
    ("slt", "Alpha, alpha, seven, seven, bravo, bravo, three, three. Is that right?", "f"),
    ("awb", "Yes, yes, that is right. That is exactly right.", "f"),
    ("slt", "And the phone number of the hotel?", ""),
    ("awb", "Zero two zero, seven nine four six, zero zero zero zero. I say again, zero two zero, seven nine "
            "four six, zero zero zero zero.", ""),
    ("slt", "Zero two zero, seven nine four six, zero zero zero zero. Thank you.", "f"),
    ("awb", "Before we land, let us run the checklist together. I read, you answer.", ""),
    ("slt", "Go ahead.", ""),
    ("awb", "Seat belts.", "f"),
    ("slt", "On, on, on.", "f"),
    ("awb", "Landing lights.", "f"),
    ("slt", "On, on, on.", "f"),
    ("awb", "Flaps.", "f"),
    ("slt", "Set, set, set.", "f"),
    ("awb", "Gear.", "f"),
    ("slt", "Down, three green. Down, three green. Down, three green.", "f"),
    ("awb", "Brakes.", "f"),
    ("slt", "Checked, checked, checked.", "f"),
    ("awb", "Landing checklist complete. Landing checklist complete.", ""),
    ("slt", "Testing, testing, one two three. Testing, testing, one two three. Can you hear me now? Can you "
            "hear me now?", ""),
    ("awb", "Yes, I can hear you. I can hear you loud and clear. Loud and clear.", "f"),
    ("slt", "Good. Then I will read the gate changes once more, and please say them back to me. Gate twelve "
            "moves to gate fourteen. Gate fourteen moves to gate sixteen. Gate sixteen moves to gate eighteen. "
            "Gate eighteen moves to gate twenty.", ""),
    ("awb", "Gate twelve moves to gate fourteen. Gate fourteen moves to gate sixteen. Gate sixteen moves to "
            "gate eighteen. Gate eighteen moves to gate twenty.", "f"),
    ("slt", "Correct. Gate twenty moves to gate twenty two, and gate twenty two is closed all day.", ""),
    ("awb", "Gate twenty moves to gate twenty two, and gate twenty two is closed all day. Understood, "
            "understood.", "f"),
    ("slt", "Thank you, that is all for today. Thank you, thank you very much.", ""),
    ("awb", "Thank you. Bye, bye, bye now.", "f"),
)

PLANNING = (
    ("rms", "Thanks for dialling in. Can everybody hear me? We have a lot to get through this morning, so I "
            "would like to go straight to the schedule, then the budget, and then the open questions from last "
            "week's review, which we did not have time to finish.", ""),
    ("slt", "Yes, we can hear you, although the line is a little faint on our side, so you may have to speak "
            "up a bit when you get to the numbers.", "q"),
    ("rms", "Sure. The first phase of the project, which covers the design of the new loading area and the "
            "changes to the access road that the city asked for in the spring, is now expected to finish at the "
            "end of October instead of the middle of September, mainly because the soil survey took longer than "
            "anybody had planned for.", ""),
    ("slt", "That is six weeks later than the date we gave to the client, and I think we need to tell them "
            "today rather than wait for the next monthly report, because they are planning their own move "
            "around our dates.", "q"),
    ("rms", "I agree, and I will write to them this afternoon. The second phase, the building itself, can "
            "still start in November if the permits arrive on time, and the contractor has confirmed that they "
            "can keep the same team on site through the winter, which was our biggest worry.", ""),
    ("kal16", "On the budget side, the good news is that the soil survey came in under its estimate, so the "
              "delay has not cost us anything yet, but every extra week on site costs roughly twelve thousand "
              "in equipment hire, and that will add up quickly if the permits are late as well.", "q"),
    ("slt", "One more thing about the permits. The city has changed the person who handles our file, and the "
            "new person has asked for the drainage drawings again, even though we sent them twice already, "
            "once in April and once in June.", "q"),
    ("rms", "Then let us send them a third time, with a short note that lists the dates of the earlier "
            "submissions, and let us ask for a meeting with the new person so that we can walk through the "
            "whole file together and avoid any more surprises.", ""),
    ("slt", "I can arrange that. I will suggest the second week of next month, because the engineers are "
            "away at the conference until then and I would like at least one of them to be in the room.", "q"),
    ("kal16", "That works for me too. I will bring the budget, and I will also bring the risk list, which has "
              "grown from eleven items to fifteen items since the last review.", "q"),
    ("rms", "Good. So to sum up, the first phase moves to the end of October, I write to the client today, "
            "the budget figures come to me before lunch, and we meet the city in the second week of next month. "
            "Thank you all, and talk to you next week.", ""),
)


STRESS = [
    Stress("stress_nl_fast_experiments_gods", 42, "nl", levels=("experiments", "gods"), fast="all",
           notes="Dutch, every turn at sox tempo 1.3, 0.05-0.2 s gaps"),
    Stress("stress_nl_quiet_corridor_creatures", 43, "nl", levels=("corridor", "creatures"), quiet=(8, 2), keep=52,
           notes="Dutch, runs of 8 turns, every second run 20-30 dB quieter, 0.05-0.2 s gaps"),
    Stress("stress_cs_en_switch_library_society", 50, "cs", levels=("library", "society"), cast=("cs", ("en:slt",)),
           notes="code-switching: the big fish's lines by the Czech actor, the small fish's by flite in English, "
                 "0.05-0.2 s gaps"),
    Stress("stress_en_inventory", 44, "en", script=INVENTORY,
           notes="English, one speaker reading lists (items, counts, order numbers), 0.05-0.2 s gaps"),
    Stress("stress_en_readback", 45, "en", script=READBACK,
           notes="English read-backs and repeated phrases, two speakers, one of them mostly fast (tempo 1.3)"),
    Stress("stress_en_quiet_planning", 46, "en", script=PLANNING,
           notes="English long sentences, three speakers, the remote ones' turns 20-30 dB quieter"),
]


# --- turns -----------------------------------------------------------------------------------------

def turn(source: Path, work: Path, tempo: float | None) -> np.ndarray:
    if tempo:
        faster = work / "tempo.wav"
        subprocess.run(["sox", "-R", str(source), "-b", "32", "-e", "floating-point", str(faster),
                        "tempo", "-s", str(tempo)], check=True, capture_output=True)  # float: no dither, repeatable
        source = faster
    return sox_turn(source, work)


def stress_turns(spec: Stress, work: Path) -> tuple[list[tuple[str, str, np.ndarray]], list[dict]]:
    """The turns (speaker, text, samples) and each turn's extra ground truth (tempo; gain_db None where quiet)."""
    turns, extra = [], []
    if spec.cast:  # the levels' lines in their roles' languages (mixed.py), language per turn
        conv = Conversation(spec.name, "", "", spec.seed, spec.cast[0], spec.cast[1])
        lines = [cast for level in spec.levels for cast in casting(conv, game_lines(level))]
        for line, role in lines[: spec.keep or None]:
            said = spoken(line, role, work)
            if said is not None:
                turns.append((role_label(line["speaker"], role), said[1], said[2]))
                extra.append({"language": said[0]})
    elif spec.language == "nl":
        lines = [line for level in spec.levels for line in fillets_dialogues(level)][: spec.keep or None]
        size, every = spec.quiet
        for index, (speaker, text, sound) in enumerate(lines):
            tempo = FAST if spec.fast == "all" else None
            turns.append((speaker, text, turn(sound, work, tempo)))
            info = {"tempo": tempo} if tempo else {}
            if size and (index // size) % every == every - 1:
                info["gain_db"] = None  # drawn by draw_quiet
            extra.append(info)
    else:
        for voice, text, flags in spec.script[: spec.keep or None]:
            raw = work / "flite.wav"
            subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(raw)], check=True, capture_output=True)
            tempo = FAST if "f" in flags else None
            turns.append((voice, text, turn(raw, work, tempo)))
            info = {"tempo": tempo} if tempo else {}
            if "q" in flags:
                info["gain_db"] = None
            extra.append(info)
    return turns, extra


def draw_quiet(spec: Stress, turns: list[tuple[str, str, np.ndarray]], extra: list[dict]) -> list[dict]:
    """The quiet turns' gains, uniform in -30..-20 dB: Dutch, one per run of consecutive quiet turns; English,
    one per speaker."""
    rng = random.Random(spec.seed * 1000)  # the gaps use random.Random(seed)
    drawn, run, previous, filled = {}, 0, False, []
    for (speaker, _, _), info in zip(turns, extra):
        quiet = "gain_db" in info
        run += quiet and not previous
        previous = quiet
        if quiet:
            key = run if spec.language == "nl" else speaker
            if key not in drawn:
                drawn[key] = round(rng.uniform(-30.0, -20.0), 1)
            info = {**info, "gain_db": drawn[key]}
        filled.append(info)
    return filled


def assemble_close(mix: Mix, turns: list[tuple[str, str, np.ndarray]], gains: list[float],
                   gap: tuple[float, float]):
    """build.assemble with gaps drawn from ``gap`` (build.assemble's are 0.25-0.9 s): same timing, same levelling."""
    rng = random.Random(mix.seed)
    clock, placed, truth = 0.0, [], []
    for speaker, text, samples in turns:
        clock += rng.uniform(*gap)
        start, end = round(clock, 3), round(clock + len(samples) / RATE, 3)
        placed.append((int(round(start * RATE)), samples))
        truth.append({"speaker": speaker, "start": start, "end": end, "text": text})
        clock += len(samples) / RATE
    duration = round(clock + 0.5, 3)
    total = max(at + len(samples) for at, samples in placed) + RATE // 2
    signal = np.zeros(total)
    for index, (at, samples) in enumerate(placed):
        signal[at: at + len(samples)] += samples * gains[index]
    dither = np.random.default_rng(mix.seed)
    stage = dithered(signal / mix.down, dither).astype(np.float64) / 32768
    final = dithered(stage * 10 ** (-3 / 20) / np.abs(stage).max(), dither)
    return final, duration, truth


def build_stress(spec: Stress, out: Path, work: Path) -> dict:
    turns, extra = stress_turns(spec, work)
    extra = draw_quiet(spec, turns, extra)
    gains = [g * 10 ** (info.get("gain_db", 0.0) / 20) for g, info in zip(speaker_gains(turns), extra)]
    mix = Mix(GROUP, spec.name, spec.seed, DOWN)
    samples, duration, truth = assemble_close(mix, turns, gains, spec.gap)
    truth = [{"speaker": t["speaker"], "language": info.get("language", spec.language), "start": t["start"],
              "end": t["end"], "text": t["text"], **{k: v for k, v in info.items() if k != "language"}}
             for t, info in zip(truth, extra)]
    write_dialogue(mix, out, samples, duration, truth)
    return {"file": f"{spec.name}.flac", "language": spec.language,
            "languages": list(dict.fromkeys(t["language"] for t in truth)), "duration": duration, "turns": len(truth),
            "speakers": list(dict.fromkeys(t["speaker"] for t in truth)), "levels": list(spec.levels),
            "quiet_turns": sum("gain_db" in t for t in truth), "fast_turns": sum("tempo" in t for t in truth),
            "what": spec.notes}


def build(out: Path) -> None:
    missing = [tool for tool in ("sox", "flite") if not shutil.which(tool)]
    needs = [(FILLETS / "script/library/dialogs_nl.lua", "fillets-ng-data"),
             (FILLETS / "sound/library/nl", "fillets-ng-data-nl"), (FILLETS / "sound/library/cs", "fillets-ng-data-cs")]
    missing += [package for path, package in needs if not path.exists()]
    if missing:
        sys.exit("needs the Debian packages: " + " ".join(missing))
    with tempfile.TemporaryDirectory() as work:
        files = [build_stress(spec, out, Path(work)) for spec in STRESS]
    manifest = {"about": "Repetition-loop stress files (see README.md).", "files": files}
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
    parser.add_argument("--out", type=Path, default=AUDIO, help="folder to write stress/ into (default: audio/)")
    parser.add_argument("--check", action="store_true", help="rebuild into a temporary folder and compare")
    args = parser.parse_args()
    if args.check:
        return check()
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
