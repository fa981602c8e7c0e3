"""People talking at once, made from the repository's dialogues: the tests' and the evaluation's audio.

``overlapped(name, seed)`` takes a dialogue of audio/dialogues (its turns and their exact texts), cuts
each turn out and lays them down again with the same pauses, except that about a third of the speaker
changes (chosen by ``seed``) start the next turn 0.5-1.5 s before the previous one ends, and one
backchannel of the listener ("yeah" in flite's voice, "O ja." cut from fillets_cave's big_fish) lands in
a pause inside another speaker's long turn. The truth comes back as turns with text, so cpWER, WER and
the overlapped stretches can be scored against it.
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from support.paths import AUDIO

RATE = 16000
DIALOGUES = ("flite_meeting", "fillets_barrel", "fillets_cave")
OVERLAP_S = (0.5, 1.5)
OVERLAPPED_SHARE = 1 / 3  # of the speaker changes
FLITE_VOICES = {"slt", "rms", "awb"}
LONG_TURN_S = 3.0  # a backchannel needs a turn this long to land in


@dataclass(frozen=True)
class Truth:
    speaker: str
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class Overlapped:
    samples: np.ndarray
    turns: list[Truth]  # in start order; the backchannel is one of them
    backchannel: Truth | None

    @property
    def duration(self) -> float:
        return len(self.samples) / RATE

    def overlaps(self) -> list[tuple[float, float]]:
        """Where two speakers' turns meet: the stretches to mark."""
        found = []
        for i, a in enumerate(self.turns):
            for b in self.turns[i + 1:]:
                if a.speaker != b.speaker and b.start < a.end and a.start < b.end:
                    found.append((max(a.start, b.start), min(a.end, b.end)))
        return sorted(found)


def decode(path: Path) -> np.ndarray:
    """16 kHz mono float32 through sox (any of the repository's formats)."""
    raw = subprocess.run(["sox", str(path), "-t", "raw", "-r", str(RATE), "-c", "1", "-e", "floating-point",
                          "-b", "32", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.float32).copy()


@cache
def _dialogue(name: str) -> tuple[np.ndarray, tuple[Truth, ...]]:
    path = AUDIO / "dialogues" / f"{name}.flac"
    turns = json.loads(path.with_suffix(".json").read_text())["turns"]
    return decode(path), tuple(Truth(t["speaker"], t["start"], t["end"], t["text"]) for t in turns)


@cache
def backchannel_clip(speaker: str) -> tuple[np.ndarray, str] | None:
    """A short "yes" in ``speaker``'s voice, or None when the repository has none."""
    if speaker in FLITE_VOICES:
        with tempfile.TemporaryDirectory() as folder:
            wav = Path(folder) / "yeah.wav"
            subprocess.run(["flite", "-voice", speaker, "-t", "yeah", "-o", str(wav)], check=True)
            return _trimmed(decode(wav)), "yeah"
    if speaker == "big_fish":  # fillets_cave's second turn is big_fish's "O ja."
        samples, turns = _dialogue("fillets_cave")
        turn = turns[1]
        return _trimmed(samples[int(turn.start * RATE):int(turn.end * RATE)]), turn.text
    return None


def _trimmed(samples: np.ndarray, floor: float = 0.01) -> np.ndarray:
    loud = np.flatnonzero(np.abs(samples) > floor)
    return samples[loud[0]:loud[-1] + 1] if len(loud) else samples


def overlapped(name: str, seed: int, *, first_s: float | None = None) -> Overlapped:
    """``name``'s dialogue with overlapped speaker changes and one backchannel (``seed`` picks them);
    ``first_s``: only the turns that start before it (a short file for the tests)."""
    samples, turns = _dialogue(name)
    turns = [t for t in turns if first_s is None or t.start < first_s]
    chosen = random.Random(seed)
    placed: list[Truth] = []
    shift = 0.0  # how much earlier every later turn now starts
    for previous, turn in zip([None, *turns], turns, strict=False):
        if previous is not None and previous.speaker != turn.speaker and chosen.random() < OVERLAPPED_SHARE:
            room = min(previous.end - previous.start, turn.end - turn.start) / 2
            wanted = min(chosen.uniform(*OVERLAP_S), room)
            shift += turn.start - previous.end + wanted  # the pause goes, then the overlap
        placed.append(Truth(turn.speaker, round(turn.start - shift, 3), round(turn.end - shift, 3), turn.text))
    following = [t.start for t in _dialogue(name)[1] if t.start > turns[-1].end]
    end = placed[-1].end + min(following + [len(samples) / RATE]) - turns[-1].end  # the pause after, kept
    mix = np.zeros(int(np.ceil(end * RATE)) + 1, dtype=np.float32)
    for source, target in zip(turns, placed, strict=True):
        _add(mix, samples[int(source.start * RATE):int(source.end * RATE)], target.start)
    backchannel = _backchannel(mix, placed, chosen)
    if backchannel is not None:
        placed = sorted([*placed, backchannel], key=lambda t: t.start)
    return Overlapped(mix, placed, backchannel)


def _add(mix: np.ndarray, clip: np.ndarray, start: float) -> None:
    at = round(start * RATE)
    mix[at:at + len(clip)] += clip[:len(mix) - at]  # a cut turn ends inside the mix


def _backchannel(mix: np.ndarray, placed: list[Truth], chosen: random.Random) -> Truth | None:
    """The listener's "yes" in the quietest 0.3 s of a long turn, 1 s or more from its ends and from the
    other speakers' turns overlapping it."""
    speakers = sorted({t.speaker for t in placed})
    candidates = []
    for turn in placed:
        others = [s for s in speakers if s != turn.speaker and backchannel_clip(s) is not None]
        low, high = _free(turn, placed)
        if turn.end - turn.start >= LONG_TURN_S and others and high - low >= 1.0:
            candidates.append((turn, others, low, high))
    if not candidates:
        return None
    turn, others, low, high = chosen.choice(candidates)
    listener = chosen.choice(others)
    clip, text = backchannel_clip(listener)
    at = _quietest(mix, low, high - len(clip) / RATE)
    _add(mix, clip, at)
    return Truth(listener, round(at, 3), round(at + len(clip) / RATE, 3), text)


def _free(turn: Truth, placed: list[Truth], margin_s: float = 1.0) -> tuple[float, float]:
    """The part of ``turn`` no other speaker's turn comes within ``margin_s`` of (or its ends)."""
    low, high = turn.start, turn.end
    for other in placed:
        if other.speaker != turn.speaker and other.start < turn.end and turn.start < other.end:
            if other.start <= turn.start:
                low = max(low, other.end)
            else:
                high = min(high, other.start)
    return low + margin_s, high - margin_s


def _quietest(mix: np.ndarray, low: float, high: float, window_s: float = 0.3) -> float:
    """The start of the quietest ``window_s`` between ``low`` and ``high`` (a pause between phrases)."""
    hop = RATE // 100
    starts = np.arange(int(low * RATE), max(int(high * RATE), int(low * RATE) + 1), hop)
    width = int(window_s * RATE)
    energy = [float(np.sum(mix[s:s + width] ** 2)) for s in starts]
    return float(starts[int(np.argmin(energy))]) / RATE
