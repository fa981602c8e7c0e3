"""The rooms sets' sources: the clean dialogues, the noise recordings and the listeners' backchannels.

Each source belongs to one part: ``tuning`` (what anyone may tune on) or ``untuned`` (kept apart, to
judge). Nothing is shared between the parts: other dialogues, other noise recordings, other rooms.

- Dialogues. tuning: audio/dialogues (fillets_barrel, fillets_cave, flite_meeting). untuned: built here
  like build.py builds its dialogues, from Fish Fillets NG levels no other set uses (Dutch from
  ``fillets-ng-data-nl``, Czech from ``fillets-ng-data-cs``; GPL-2) and a new flite meeting (flite's
  BSD-style licence; our text, MIT).
- Noise (Debian packages, licences from /usr/share/doc/PKG/copyright):
  crowd and traffic: LinCity-NG's ambient recordings (``lincity-ng-data``, sounds/*.wav, GPL-2+);
  music: Asterisk's music on hold (``asterisk-moh-opsound-wav``, CC-BY-SA-3.0, Macroform, Manolo Camp,
  Reno Project); other talkers: babble of three streams of voices not in any dialogue (tuning: flite's
  kal and kal16 reading our texts; untuned: the Czech fish of levels no set uses).
- Backchannels: the listener's own short lines ("ja", "ano", "hm") from the same actor's recordings of
  other levels, or for flite voices short words said by the same voice.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import (
    AUDIO,
    FILLETS,
    FISH,
    RATE,
    Mix,
    assemble,
    lua_string,
    sox_turn,
    write_dialogue,
)

LINCITY = Path("/usr/share/games/lincity-ng/sounds")  # lincity-ng-data
MOH = Path("/usr/share/asterisk/moh")  # asterisk-moh-opsound-wav
PARTS = ("tuning", "untuned")

# name -> (part, how it is made): "audio" (committed), "fillets:LANG:LEVEL" or "flite" (FLITE_STANDUP)
DIALOGUES = {
    "fillets_barrel": ("tuning", "audio"),
    "fillets_cave": ("tuning", "audio"),
    "flite_meeting": ("tuning", "audio"),
    "fillets_corridor": ("untuned", "fillets:nl:corridor"),
    "fillets_linux": ("untuned", "fillets:nl:linux"),
    "fillets_cs_windoze": ("untuned", "fillets:cs:windoze"),
    "flite_standup": ("untuned", "flite"),
}
SEEDS = {"fillets_corridor": 71, "fillets_linux": 72, "fillets_cs_windoze": 73, "flite_standup": 74}
LANGUAGES = {"fillets_cs_windoze": "cs", "flite_meeting": "en", "flite_standup": "en"}  # else nl

FLITE_STANDUP = [
    ("kal16", "Morning everyone. Let us keep this short, we have the customer visit at ten."),
    ("slt", "Fine by me. I finished the invoice export yesterday and it is waiting for review."),
    ("rms", "I can review it after lunch. Did you test it with the old accounts as well?"),
    ("slt", "Only with the new ones. The old accounts still use the previous tax rules."),
    ("kal16", "Then please add a test for those before we merge anything."),
    ("rms", "The build server was down for an hour this morning, so my tests are late too."),
    ("kal16", "Was it the disk again? We talked about replacing it last week."),
    ("rms", "Yes, the same disk. I ordered a new one and it should arrive on Thursday."),
    ("slt", "Could we move the release to Monday, so there is time to test everything?"),
    ("kal16", "Monday works. I will tell the customer today, during the visit."),
    ("rms", "Good. One more thing, the printer on the second floor is broken again."),
    ("slt", "I will call the service company. Anything else, or are we done?"),
    ("kal16", "We are done. Thank you all, and good luck with the tests."),
]
FLITE_BACKCHANNELS = ["yeah", "right", "okay", "mm hmm", "sure"]
BABBLE_TEXTS = [  # the tuning part's other talkers (flite kal, kal16): never in a dialogue
    "The train to the airport leaves every twenty minutes from platform four.",
    "I think the soup needs more salt, but the bread is really very good today.",
    "She said the meeting was moved, although nobody told the people downstairs.",
    "We walked along the river until it got dark and then took a taxi home.",
    "Have you seen the new exhibition? The paintings from the north are wonderful.",
    "My brother is moving to another city next spring, closer to his work.",
]
# kind -> part -> recordings (the parts never share one)
NOISES = {
    "crowd": {"tuning": [LINCITY / f"{n}.wav" for n in ("SportsCroud1", "SportsCroud2", "MarketFull1")],
              "untuned": [LINCITY / f"{n}.wav" for n in ("SportsCroud3", "MarketMed1", "MarketLow1")]},
    "traffic": {"tuning": [LINCITY / f"{n}.wav" for n in ("TraficHigh1", "TraficLow1", "TraficHigh2")],
                "untuned": [LINCITY / f"{n}.wav" for n in ("TraficHigh3", "TraficLow2", "TraficLow3")]},
    "music": {"tuning": [MOH / "macroform-cold_day.wav", MOH / "macroform-robot_dity.wav"],
              "untuned": [MOH / "macroform-the_simplicity.wav", MOH / "manolo_camp-morning_coffee.wav",
                          MOH / "reno_project-system.wav"]},
    "talkers": {"tuning": ["flite:kal", "flite:kal16"], "untuned": ["fillets:cs:library", "fillets:cs:start"]},
}
NOISE_KINDS = tuple(NOISES)
NEEDS = {"sox": "sox", "flite": "flite", str(LINCITY / "MarketFull1.wav"): "lincity-ng-data",
         str(MOH / "macroform-cold_day.wav"): "asterisk-moh-opsound-wav",
         str(FILLETS / "sound/windoze/cs"): "fillets-ng-data-cs", str(FILLETS / "sound/linux/nl"): "fillets-ng-data-nl"}

_Q = r'"((?:[^"\\]|\\.)*)"'
_DIALOG = re.compile(rf"dialogId\(\s*{_Q}\s*,\s*{_Q}\s*,\s*{_Q}\s*\)\s*dialogStr\(\s*{_Q}\s*\)", re.DOTALL)


def missing() -> list[str]:
    import shutil

    return [package for need, package in NEEDS.items()
            if not (shutil.which(need) if "/" not in need else Path(need).exists())]


def fish_lines(level: str, language: str) -> list[tuple[str, str, Path]]:
    """(speaker, text, sound) of a level's fish lines in a language, in its script's order (build.py's rule)."""
    script = (FILLETS / "script" / level / f"dialogs_{language}.lua").read_text(encoding="utf-8")
    found = []
    for ident, font, _english, text in _DIALOG.findall(script):
        sound = FILLETS / "sound" / level / language / f"{ident}.ogg"
        if font in FISH and sound.exists() and soundfile.info(str(sound)).frames > 0:
            found.append((FISH[font], lua_string(text), sound))
    return found


def flite(voice: str, text: str, work: Path) -> np.ndarray:
    raw = work / "flite.wav"
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(raw)], check=True, capture_output=True)
    return sox_turn(raw, work)


def dialogue(name: str, out: Path, work: Path) -> Path:
    """The clean dialogue's FLAC (its .json and .rttm beside it): committed, or built into out/sources."""
    _, how = DIALOGUES[name]
    if how == "audio":
        return AUDIO / "dialogues" / f"{name}.flac"
    path = out / "sources" / f"{name}.flac"
    if path.exists() and path.with_suffix(".json").exists():
        return path
    if how == "flite":
        turns = [(voice, text, flite(voice, text, work)) for voice, text in FLITE_STANDUP]
    else:
        _, language, level = how.split(":")
        turns = [(speaker, text, sox_turn(sound, work)) for speaker, text, sound in fish_lines(level, language)]
    mix = Mix("sources", name, SEEDS[name], 8)
    write_dialogue(mix, out, *assemble(mix, turns))
    return path


def read(path: Path) -> tuple[np.ndarray, list[dict]]:
    samples, rate = soundfile.read(str(path), dtype="float64")
    assert rate == RATE and samples.ndim == 1, path
    return samples, json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["turns"]


def _loop(clips: list[np.ndarray], length: int, rng: random.Random) -> np.ndarray:
    """Clips in a seeded order, joined with 50 ms cross-fades, until ``length`` samples."""
    fade = RATE // 20
    ramp = np.linspace(0, 1, fade)
    out = np.zeros(0)
    while len(out) < length:
        clip = clips[rng.randrange(len(clips))]
        if not len(out):
            out = clip.copy()
            continue
        out[-fade:] = out[-fade:] * ramp[::-1] + clip[:fade] * ramp
        out = np.concatenate([out, clip[fade:]])
    start = rng.randrange(max(1, len(out) - length))
    return out[start: start + length]


def _babble(sources: list[str], length: int, rng: random.Random, work: Path) -> np.ndarray:
    """Three streams of other talkers (the part's voices in turn), each its speech back to back, summed."""
    streams = []
    for index in range(3):
        kind, *rest = sources[index % len(sources)].split(":")
        if kind == "flite":
            clips = [flite(rest[0], text, work) for text in BABBLE_TEXTS]
        else:
            clips = [sox_turn(sound, work) for _, _, sound in fish_lines(rest[1], rest[0])[:24]]
        streams.append(_loop(clips, length, random.Random(rng.random())))
    return sum(streams)


def noise(kind: str, part: str, length: int, seed: int, work: Path) -> tuple[np.ndarray, list[str]]:
    """``length`` samples of one noise kind from the part's recordings (zero mean), and which recordings."""
    rng = random.Random(seed)
    sources = NOISES[kind][part]
    if kind == "talkers":
        signal = _babble(sources, length, rng, work)
        used = list(sources)
    else:
        if kind == "music":  # one piece, long enough alone
            sources = [sources[rng.randrange(len(sources))]]
        clips = [sox_turn(path, work) for path in sources]
        signal = _loop(clips, length, rng)
        used = [str(path) for path in sources]
    return signal - signal.mean(), used


def backchannels(name: str, speaker: str, work: Path) -> list[tuple[str, np.ndarray]]:
    """The speaker's own short lines (one or two words, at most 1.2 s once trimmed): (text, samples)."""
    if LANGUAGES.get(name) == "en":
        return [(word, flite(speaker, word, work)) for word in FLITE_BACKCHANNELS]
    language = LANGUAGES.get(name, "nl")
    levels = sorted(p.name for p in (FILLETS / "script").iterdir() if (p / f"dialogs_{language}.lua").exists())
    candidates = sorted((soundfile.info(str(sound)).duration, level, text, sound) for level in levels
                        for who, text, sound in fish_lines(level, language)
                        if who == speaker and len(text.split()) <= 2 and soundfile.info(str(sound)).duration <= 2.0)
    found = []
    for _, _, text, sound in candidates:
        samples = sox_turn(sound, work)
        if len(samples) <= 1.2 * RATE:
            found.append((text, samples))
    return found[:6]
