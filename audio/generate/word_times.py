"""Builds audio/word_times: flite-spoken English with the exact start and end of every word.

    apt-get install -y flite sox            # Debian's flite 2.2 (with libflite1) and sox
    python3 -m venv /tmp/voices-venv && /tmp/voices-venv/bin/pip install numpy soundfile
    /tmp/voices-venv/bin/python audio/generate/word_times.py [--out DIR]   # default: audio/word_times
    /tmp/voices-venv/bin/python audio/generate/word_times.py --check       # rebuild in a temp folder, compare
    /tmp/voices-venv/bin/python audio/generate/word_times.py --verify [DIR] # energy at word edges next to silence

Ground truth. ``flite -voice V -psdur -t TEXT`` prints every segment (phone or ``pau``) with its end
time, from the same run that writes the audio. ``flite -pr Word`` gives the utterance's words and
``t2p WORD`` (flite's text-to-phones tool) each word's phones. Walking the segments without ``pau``
word by word, each word takes as many phones as t2p gives it; the phones must be the same except
for same-length substitutions inside one word (``a`` is ``ey`` alone but ``ax`` in a sentence,
``the`` is ``dh iy`` before a vowel, ``close`` and ``lives`` are homographs), otherwise the sentence
is refused. A word starts where the segment before its first phone ends (``pau`` or the previous
word's last phone) and ends where its last phone ends. Every sentence must be one flite utterance
and its flite words must be its own words, lowercased, without punctuation (no numbers in digits,
no abbreviations). The mapping is then checked against flite's own word-to-segment links: libflite
(via ctypes) synthesises the same text and its ``SylStructure`` relation gives each word's first and
last segment; both must agree to 0.6 ms (psdur prints milliseconds).

Timing in the audio: a diphone voice (kal 8 kHz, kal16 16 kHz) warps each half-diphone onto the
target segment ends (``cst_diphone.c``: a phone boundary lands on the segment's end, to one sample of
the voice's rate); a clustergen voice (slt, rms, awb, 16 kHz) renders 5 ms frames, frame k at
k * 5 ms belonging to the segment whose end is at or after it. Sample 0 of flite's output is time 0
of its segment times. kal is resampled to 16 kHz by sox (``rate``, linear phase, delay compensated),
untrimmed; the 16 kHz voices are used as they are.

Files. Every voice speaks every sentence. ``SENTENCES[i]`` with ``i % 3 == 2`` form the held-out
set ``check``, the others ``tune``; each (voice, set) is shuffled by ``random.Random(seed)`` and cut
into ceil(total / 75 s) files of 30-90 s, of lengths in proportion to seeded ``uniform(0.5, 1.5)``.
Between two sentences (last word's end to next first word's start) there is ``uniform(0.15, 2.0)`` s
of silence, also before the first word of a file, and ``uniform(0.3, 1.0)`` s after the last. Each sentence keeps min(0.1 s, half the adjacent gap) of its own ``pau`` audio on
each side of its words, with 10 ms raised-cosine fades at the cut, and is placed at a whole
millisecond, so word times stay exact (ms). The mix is peak-normalised to -3 dBFS and put into 16
bits with TPDF dither (``build.dithered``, seeded): the silences are that dither alone.
"""

from __future__ import annotations

import argparse
import ctypes
import difflib
import functools
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import AUDIO, RATE, compare_audio, dithered  # noqa: E402

OUT = AUDIO / "word_times"
VOICES = {"kal": "diphone", "kal16": "diphone", "slt": "clustergen", "rms": "clustergen", "awb": "clustergen"}
SETS = ("tune", "check")
GAP = (0.15, 2.0)  # silence between sentences (s), also before a file's first word
TAIL = (0.3, 1.0)  # silence after a file's last word
KEEP = 0.1  # s of a sentence's own pau kept around its words (at most half the adjacent gap)
FADE = 0.010
FILE_TARGET = 75.0  # a (voice, set) is cut into ceil(total / FILE_TARGET) files,
FILE_WEIGHTS = (0.5, 1.5)  # whose lengths are in proportion to these seeded random weights
FILE_LIMITS = (30.0, 90.0)
SEED = 20240

SENTENCES = [
    "Good morning, everyone.",
    "Please close the window before you leave.",
    "Margaret bought seven oranges and two lemons at the market on Sunday.",
    "Where did you put my blue umbrella?",
    "The train to Edinburgh leaves at a quarter past nine.",
    "Thank you very much.",
    "Oliver has been learning to play the violin for almost three years.",
    "Could you tell me how to get to the library?",
    "Forty two people signed the letter, but only nine of them came to the meeting.",
    "It was raining so hard that we stayed inside all afternoon.",
    "My brother lives in a small village near the coast.",
    "How many minutes does it take to boil an egg?",
    "Yes, of course.",
    "The museum opens at ten in the morning and closes at six in the evening.",
    "Samuel forgot his keys again, so he waited on the porch until his sister came home.",
    "Nobody knew where the old map had gone.",
    "Would you like some more tea?",
    "Our company was founded in nineteen eighty seven by two brothers from Chicago.",
    "The children built a tall tower out of wooden blocks.",
    "Turn left at the bakery and walk for another two hundred meters.",
    "She sold her bicycle for sixty dollars.",
    "Why is the sky blue on a clear day?",
    "Daniel and Rebecca are getting married in the spring.",
    "The recipe calls for three cups of flour, one spoon of salt, and a little butter.",
    "I think we should wait.",
    "After dinner, my grandmother told us stories about her childhood on a farm in Norway.",
    "The meeting has been moved to Thursday afternoon.",
    "Is this seat taken?",
    "A strong wind blew the leaves across the garden.",
    "We need twelve chairs, four tables, and a long white cloth.",
    "Victoria walked her dog along the river every morning before work.",
    "Please remember to water the plants while I am away.",
    "What time does the next bus arrive?",
    "The football match ended in a draw after ninety minutes of hard play.",
    "Peter painted the kitchen yellow last weekend.",
    "Every summer, thousands of birds fly north to build their nests near the lakes.",
    "Can you hear me now?",
    "The hotel room had a wonderful view of the mountains.",
    "Fifteen students passed the exam with very high marks.",
    "My phone battery died in the middle of the call.",
    "Good night.",
    "Jonathan wrote a long letter to his friend in Melbourne, but he never sent it.",
    "Where are the scissors?",
    "The doctor said I should drink more water and sleep at least eight hours.",
    "Lucy found a silver coin under the sofa.",
    "How much does a ticket to London cost?",
    "The bridge was closed for repairs for nearly two months.",
    "Maria speaks Spanish, French, and a little German.",
    "Let me know when you are ready.",
    "The farmer sold three hundred kilograms of potatoes at the autumn fair.",
    "Did anybody see my glasses?",
    "We walked along the beach until the sun went down behind the hills.",
    "Robert fixed the broken fence in less than an hour.",
    "That sounds like a good plan.",
    "On Monday morning, the whole office was quiet because the power had gone out.",
    "Which of these two coats do you prefer?",
    "The library will be closed on the first of January.",
    "Anna always arrives early.",
    "My neighbor grows tomatoes, beans, and carrots in his back garden.",
    "The concert was cancelled because the singer had a bad cold.",
    "Could you speak a little more slowly, please?",
    "Thirty one boxes were delivered to the wrong house yesterday.",
    "Henry spent the whole winter writing a book about the history of his town.",
    "I am not sure.",
    "The cat jumped onto the table and knocked over a glass of milk.",
    "When will the new bridge be finished?",
    "George counted the money twice before he gave it to the bank.",
    "The little boat drifted slowly toward the harbor as the fog lifted.",
    "Please send me the report by Friday.",
    "Twenty years ago, this street was full of small shops and busy markets.",
    "Who left the door open?",
    "Elizabeth plays tennis with her cousin every Saturday morning.",
    "The soup tastes much better with fresh bread.",
    "If the weather is nice tomorrow, we will drive to the lake and have a picnic.",
]


def sentence_set(index: int) -> str:
    return "check" if index % 3 == 2 else "tune"


# --- flite: segments, words, phones ----------------------------------------------------------------

def flite(voice: str, text: str, *options: str, wav: str = "none") -> str:
    return subprocess.run(["flite", "-voice", voice, *options, "-t", text, "-o", wav],
                          check=True, capture_output=True, text=True).stdout


@functools.lru_cache(maxsize=None)
def t2p(word: str) -> tuple[str, ...]:
    """A word's phones alone, stress marks and pau dropped."""
    out = subprocess.run(["t2p", word], check=True, capture_output=True, text=True).stdout
    return tuple(p.rstrip("012") for p in out.split() if p != "pau")


def text_words(text: str) -> list[str]:
    """The sentence's own words: split on spaces, outer punctuation stripped."""
    return [w.strip(".,?!;:\"") for w in text.split()]


def word_segments(voice: str, text: str, wav: Path) -> list[dict]:
    """Synthesises text into wav; each word with its start and end (ms) and phones, from psdur + t2p."""
    lines = flite(voice, text, "-psdur", wav=str(wav)).strip().splitlines()
    if len(lines) != 1:
        raise ValueError(f"{len(lines)} flite utterances")
    segments = [(name, int(round(float(end) * 1000))) for name, end in (s.split(":") for s in lines[0].split())]
    if segments[0][0] != "pau":
        raise ValueError("the utterance does not start with pau")
    flite_words = flite(voice, text, "-pr", "Word").split()
    own = text_words(text)
    if flite_words != [w.lower() for w in own]:
        raise ValueError(f"flite's words {flite_words} are not the text's")
    expected = [t2p(w) for w in flite_words]
    phones = [(i, name) for i, (name, _) in enumerate(segments) if name != "pau"]
    flat = [p for word in expected for p in word]
    said = [name for _, name in phones]
    owner = [n for n, word in enumerate(expected) for _ in word]  # flat phone -> its word
    for op, a, b, c, d in difflib.SequenceMatcher(None, flat, said, autojunk=False).get_opcodes():
        if op != "equal" and (op != "replace" or b - a != d - c or owner[a] != owner[b - 1] or a != c):
            raise ValueError(f"phones differ beyond a substitution inside one word: {op} {flat[a:b]} {said[c:d]}")
    words, at = [], 0
    for word, alone in zip(own, expected):
        first, last = phones[at][0], phones[at + len(alone) - 1][0]
        words.append({"word": word, "start": segments[first - 1][1], "end": segments[last][1],
                      "phones": " ".join(said[at: at + len(alone)])})
        at += len(alone)
    return words


class Libflite:
    """flite's own Word -> SylStructure -> Segment links, through libflite (Debian libflite1)."""

    def __init__(self):
        mode = ctypes.RTLD_GLOBAL
        self.lib = ctypes.CDLL("libflite.so.1", mode=mode)
        for name in ("libflite_usenglish.so.1", "libflite_cmulex.so.1"):
            ctypes.CDLL(name, mode=mode)
        p, s = ctypes.c_void_p, ctypes.c_char_p
        for name, restype, argtypes in [("flite_synth_text", p, [s, p]), ("utt_relation", p, [p, s]),
                                        ("relation_head", p, [p]), ("item_next", p, [p]),
                                        ("ffeature_float", ctypes.c_float, [p, s]),
                                        ("ffeature_string", s, [p, s]), ("delete_utterance", None, [p])]:
            function = getattr(self.lib, name)
            function.restype, function.argtypes = restype, argtypes
        self.lib.flite_init()
        self.voices = {}

    def voice(self, name: str):
        if name not in self.voices:
            library = ctypes.CDLL(f"libflite_cmu_us_{name}.so.1")
            register = getattr(library, f"register_cmu_us_{name}")
            register.restype, register.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
            self.voices[name] = register(None)
        return self.voices[name]

    def words(self, voice: str, text: str) -> list[tuple[str, float, float]]:
        lib = self.lib
        utt = lib.flite_synth_text(text.encode(), self.voice(voice))
        found, item = [], lib.relation_head(lib.utt_relation(utt, b"Word"))
        while item:
            found.append((lib.ffeature_string(item, b"name").decode(),
                          lib.ffeature_float(item, b"R:SylStructure.daughter1.daughter1.R:Segment.p.end"),
                          lib.ffeature_float(item, b"R:SylStructure.daughtern.daughtern.end")))
            item = lib.item_next(item)
        lib.delete_utterance(utt)
        return found


def sentence_audio(voice: str, text: str, work: Path, libflite: Libflite) -> tuple[np.ndarray, list[dict]]:
    """One sentence at 16 kHz (float, untrimmed) and its words (times in ms from the audio's start)."""
    raw, wav = work / "flite.wav", work / "flite16.wav"
    words = word_segments(voice, text, raw)
    linked = libflite.words(voice, text)
    if [w for w, _, _ in linked] != [w["word"].lower() for w in words]:
        raise ValueError(f"libflite's words differ: {linked}")
    for word, (_, start, end) in zip(words, linked):
        if abs(start * 1000 - word["start"]) > 0.6 or abs(end * 1000 - word["end"]) > 0.6:
            raise ValueError(f"{word} vs libflite {start:.4f} {end:.4f}")
    subprocess.run(["sox", str(raw), "-b", "32", "-e", "floating-point", str(wav), "rate", str(RATE)],
                   check=True, capture_output=True)
    samples, rate = soundfile.read(str(wav), dtype="float64")
    assert rate == RATE and samples.ndim == 1
    return samples, words


# --- files -----------------------------------------------------------------------------------------

def plan(voice_index: int, set_name: str, spoken: list[tuple[int, np.ndarray, list[dict]]]):
    """Shuffles a (voice, set)'s spoken sentences, draws the gaps, cuts them into files: a list of files,
    each [((index, samples, words), gap before it in ms), ...], and each file's tail (ms)."""
    rng = random.Random(SEED + 10 * voice_index + SETS.index(set_name))
    items = list(spoken)
    rng.shuffle(items)
    gaps = [int(round(rng.uniform(*GAP) * 1000)) for _ in items]
    spans = [(words[-1]["end"] - words[0]["start"]) + gap for (_, _, words), gap in zip(items, gaps)]
    total = sum(spans) / 1000
    files = max(1, math.ceil(total / FILE_TARGET))
    weights = [rng.uniform(*FILE_WEIGHTS) for _ in range(files)]
    cuts = [total * sum(weights[:k]) / sum(weights) for k in range(1, files)]
    clock, groups, current = 0.0, [], []
    for item, gap, span in zip(items, gaps, spans):
        if cuts and clock + span / 2000 > cuts[0] and current:
            groups.append(current)
            current = []
            cuts.pop(0)
        current.append((item, gap))
        clock += span / 1000
    groups.append(current)
    tails = [int(round(rng.uniform(*TAIL) * 1000)) for _ in groups]
    return groups, tails


def fade(length: int) -> np.ndarray:
    return 0.5 - 0.5 * np.cos(np.pi * np.arange(length) / length)


def mix_file(group, tail_ms: int, seed: int):
    """The 16-bit file, its sentences and words (times in s, final time base)."""
    ms = RATE // 1000
    clock = 0  # ms: the previous sentence's last word's end
    pieces, sentences, words = [], [], []
    for position, ((index, samples, own), gap) in enumerate(group):
        offset = clock + gap - own[0]["start"]  # where the sentence's sample 0 lands (ms)
        after = group[position + 1][1] if position + 1 < len(group) else tail_ms
        lead, trail = min(KEEP * 1000, gap / 2), min(KEEP * 1000, after / 2)
        first = max(0, int((own[0]["start"] - lead) * ms))
        last = min(len(samples), int((own[-1]["end"] + trail) * ms))
        piece = samples[first:last].copy()
        n = int(FADE * RATE)
        piece[:n] *= fade(n)
        piece[-n:] *= fade(n)[::-1]
        pieces.append((offset * ms + first, piece))
        number = len(sentences)
        sentences.append({"text": SENTENCES[index], "start": (offset + own[0]["start"]) / 1000,
                          "end": (offset + own[-1]["end"]) / 1000})
        words += [{"word": w["word"], "start": (offset + w["start"]) / 1000, "end": (offset + w["end"]) / 1000,
                   "phones": w["phones"], "sentence": number} for w in own]
        clock = offset + own[-1]["end"]
    total = (clock + tail_ms) * ms
    signal = np.zeros(total)
    for at, piece in pieces:
        assert at >= 0 and at + len(piece) <= total
        signal[at: at + len(piece)] += piece
    final = dithered(signal * 10 ** (-3 / 20) / np.abs(signal).max(), np.random.default_rng(seed))
    return final, sentences, words


def build(out: Path) -> None:
    missing = [tool for tool in ("flite", "t2p", "sox") if not shutil.which(tool)]
    if missing:
        sys.exit("needs the Debian packages flite and sox (missing: " + " ".join(missing) + ")")
    out.mkdir(parents=True, exist_ok=True)
    libflite, manifest = Libflite(), []
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        for voice_index, (voice, kind) in enumerate(VOICES.items()):
            spoken = []
            for index, text in enumerate(SENTENCES):
                try:
                    samples, words = sentence_audio(voice, text, work, libflite)
                except ValueError as error:
                    sys.exit(f"{voice}: {text!r}: {error}")
                spoken.append((index, samples, words))
            for set_name in SETS:
                chosen = [item for item in spoken if sentence_set(item[0]) == set_name]
                groups, tails = plan(voice_index, set_name, chosen)
                for number, (group, tail) in enumerate(zip(groups, tails), 1):
                    name = f"{voice}_{set_name}_{number}"
                    seed = SEED + 100 * voice_index + 10 * SETS.index(set_name) + number
                    samples, sentences, words = mix_file(group, tail, seed)
                    duration = round(len(samples) / RATE, 3)
                    if not FILE_LIMITS[0] <= duration <= FILE_LIMITS[1]:
                        sys.exit(f"{name}: {duration} s is outside {FILE_LIMITS}")
                    soundfile.write(str(out / f"{name}.flac"), samples, RATE, subtype="PCM_16", format="FLAC")
                    truth = {"file": f"{name}.flac", "voice": voice, "kind": kind, "set": set_name,
                             "source": f"Debian flite 2.2, voice cmu_us_{voice}", "duration": duration,
                             "sentences": sentences, "words": words}
                    (out / f"{name}.json").write_text(json.dumps(truth, indent=1) + "\n", encoding="utf-8")
                    manifest.append({"file": f"{name}.flac", "truth": f"{name}.json", "voice": voice, "kind": kind,
                                     "set": set_name, "duration": duration, "sentences": len(sentences),
                                     "words": len(words)})
                    print(f"{name}: {duration:.1f} s, {len(sentences)} sentences, {len(words)} words", flush=True)
    (out / "manifest.json").write_text(json.dumps({
        "description": "flite-spoken English with every word's exact start and end (s); see README.md",
        "rate": RATE, "files": manifest}, indent=1) + "\n", encoding="utf-8")


# --- check and verify ------------------------------------------------------------------------------

def check() -> int:
    with tempfile.TemporaryDirectory() as temp:
        out = Path(temp)
        build(out)
        print(f"\n{'file':26} {'dur ms':>8} {'corr':>9} {'SNR dB':>7} {'.json':>10}")
        bad = 0
        for ours in sorted(out.glob("*.flac")):
            theirs = OUT / ours.name
            if not theirs.exists():
                print(f"{ours.name:26} not committed"); bad += 1; continue
            row = compare_audio(ours, theirs)
            same = ours.with_suffix(".json").read_bytes() == theirs.with_suffix(".json").read_bytes()
            bad += not same
            print(f"{ours.name:26} {row['dur_ms']:+8.2f} {row['corr']:.6f} {row['snr']:7.1f} "
                  f"{'identical' if same else 'DIFFERS':>10}")
        extra = sorted({p.name for p in OUT.glob("*.flac")} - {p.name for p in out.glob("*.flac")})
        for name in extra:
            print(f"{name:26} committed, not rebuilt"); bad += 1
        same = (out / "manifest.json").read_bytes() == (OUT / "manifest.json").read_bytes()
        print(f"{'manifest.json':26} {'identical' if same else 'DIFFERS'}")
        return 0 if same and not bad else 1


SONORANT = set("aa ae ah ao aw ax axr ay eh er ey ih iy ow oy uh uw l r w y m n ng".split())


def verify(folder: Path, silence: float = 0.2, below: float = 35.0, hold: float = 0.02) -> None:
    """Where a word edge is next to >= `silence` s of silence, find within 100 ms of it where the 5 ms energy
    (1-sample hop) first rises above (start) / last falls below (end) file peak - `below` dB and stays there
    for `hold` s; print the offsets from the stated edge, by the edge phone's class."""
    rows, hold_n = {}, int(hold * RATE)
    for path in sorted(folder.glob("*.json")):
        if path.name == "manifest.json":
            continue
        truth = json.loads(path.read_text(encoding="utf-8"))
        x, _ = soundfile.read(str(folder / truth["file"]), dtype="float64")
        win = RATE // 200
        level = 10 * np.log10(np.convolve(x ** 2, np.ones(win) / win, mode="same") + 1e-12)
        loud = level > level.max() - below
        held = np.convolve(loud, np.ones(hold_n), mode="full")[hold_n - 1:] >= hold_n  # loud for hold_n from here
        words = truth["words"]
        for i, w in enumerate(words):
            before = w["start"] - (words[i - 1]["end"] if i else 0.0)
            after = (words[i + 1]["start"] if i + 1 < len(words) else truth["duration"]) - w["end"]
            phones = w["phones"].split()
            for edge, gap, phone in (("start", before, phones[0]), ("end", after, phones[-1])):
                if gap < silence:
                    continue
                a, b = int((w[edge] - 0.1) * RATE), int((w[edge] + 0.1) * RATE)
                if edge == "start":
                    found = np.nonzero(held[a:b])[0]
                    at = a + found[0] if len(found) else None
                else:
                    found = np.nonzero(held[a - hold_n:b - hold_n])[0]
                    at = a + found[-1] if len(found) else None
                if at is not None:
                    group = "sonorant" if phone in SONORANT else "obstruent"
                    rows.setdefault((truth["voice"], edge, group), []).append(at / RATE - w[edge])
    print(f"{'voice':6} {'edge':5} {'phone':9} {'n':>4} {'median ms':>9} {'<=10 ms':>7} {'<=20 ms':>7} {'worst':>6}")
    for (voice, edge, group), found in sorted(rows.items(), key=lambda r: (list(VOICES).index(r[0][0]), r[0][1:])):
        d = np.array(found) * 1000
        print(f"{voice:6} {edge:5} {group:9} {len(d):4d} {np.median(d):+9.1f} {np.mean(abs(d) <= 10):7.0%} "
              f"{np.mean(abs(d) <= 20):7.0%} {d[np.argmax(abs(d))]:+6.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write into (default: audio/word_times)")
    parser.add_argument("--check", action="store_true", help="rebuild into a temporary folder, compare with "
                        "the committed files")
    parser.add_argument("--verify", nargs="?", const=OUT, type=Path, metavar="DIR",
                        help="measure the energy at word edges next to silence in DIR's files")
    args = parser.parse_args()
    if args.check:
        return check()
    if args.verify:
        verify(args.verify)
        return 0
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
