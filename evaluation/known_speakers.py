"""Known speakers by name: share of words given the right name, and unenrolled voices given a name.

    python -m evaluation known_speakers [--out results/known_speakers.json] [--files ...]

Each test file runs once through the handler (embedded base, CTranslate2, DIARIZATION_MODEL=embedded,
the file's language given, ``return_speaker_embeddings``, ``return_speaker_words``). Voices are enrolled
from recordings that are not the test file: the fish from ``fillets_long`` (for barrel and cave) or from
barrel + cave (for the long file), three turns of 3-10 s each; the flite voices from three other sentences
that flite (Debian package ``flite``) synthesises here. Each scenario then matches the file's speaker
centroids to the voiceprints with ``speaker_names.match``, as the handler does:

Each voice is enrolled with three clips, and again with one (OpenAI's one reference per name).

- ``all``: the whole cast enrolled, plus impostors (voices not in the file);
- ``without X``: every cast member but X enrolled, plus the impostors: X must keep ``SPEAKER_xx``.

Scores: words named right (a word's reference speaker is the ground-truth turn holding its middle;
words outside every turn are not scored), unenrolled voices named, and the similarities of right and
wrong pairings, from which MATCH_THRESHOLD is chosen on the dev files (fillets_barrel, flite_meeting)
only; fillets_cave and fillets_long are reported, not tuned on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from support.paths import AUDIO

os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "0")
RATE = 16000

# name: (audio, language, dev file (tuned on), recordings the cast is enrolled from)
FILES = {
    "fillets_barrel": (AUDIO / "dialogues" / "fillets_barrel.flac", "nl", True, ["fillets_long"]),
    "flite_meeting": (AUDIO / "dialogues" / "flite_meeting.flac", "en", True, ["flite"]),
    "fillets_cave": (AUDIO / "dialogues" / "fillets_cave.flac", "nl", False, ["fillets_long"]),
    "fillets_long": (AUDIO / "long" / "fillets_long.flac", "nl", False, ["fillets_barrel", "fillets_cave"]),
}
SOURCES = {name: path for name, (path, *_rest) in FILES.items()}
FLITE_SENTENCES = [  # none of them is said in flite_meeting
    "The weather station on the hill recorded a cold night and a bright, windy morning.",
    "Please bring the blue folders to the second floor before the library closes.",
    "Our train left the city at seven and reached the coast a little after noon.",
]
FLITE_VOICES = ("awb", "rms", "slt")
CLIPS_PER_NAME = (3, 1)
IMPOSTOR_CLIPS = ["asterisk_all-circuits-busy-now", "asterisk_conf-adminmenu-162", "asterisk_vm-rec-unv"]


def decode(path: Path):
    from whisper_endpoint.audio.decode import decode_file

    return decode_file(path.read_bytes(), max_seconds=3600).samples


def fish_clips(source: str) -> dict[str, list]:
    """Three turns of 3-10 s per fish, the first ones in time, cut from ``source``."""
    samples = decode(SOURCES[source])
    turns = json.loads(SOURCES[source].with_suffix(".json").read_text())["turns"]
    clips: dict[str, list] = {}
    for turn in turns:
        chosen = clips.setdefault(turn["speaker"], [])
        if 3.0 <= turn["end"] - turn["start"] <= 10.0 and len(chosen) < 3:
            chosen.append(samples[round(turn["start"] * RATE): round(turn["end"] * RATE)])
    return clips


def flite_clips(voices=FLITE_VOICES) -> dict[str, list]:
    if shutil.which("flite") is None:
        raise SystemExit("flite is not installed (apt-get install flite): it synthesises the flite enrolment")
    clips: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as folder:
        for voice in voices:
            for index, sentence in enumerate(FLITE_SENTENCES):
                wav = Path(folder) / f"{voice}{index}.wav"
                subprocess.run(["flite", "-voice", voice, "-t", sentence, "-o", str(wav)], check=True)
                clips.setdefault(voice, []).append(decode(wav))
    return clips


def impostor_clips() -> dict[str, list]:
    """Voices in none of the dialogues: the Asterisk prompts' speaker (Allison) and flite's kal16."""
    allison = [decode(AUDIO / "clips" / f"{name}.flac") for name in IMPOSTOR_CLIPS]
    return {"allison": allison, **{"kal16": flite_clips(("kal16",))["kal16"]}}


def enrolment(name: str) -> dict[str, list]:
    clips: dict[str, list] = {}
    for source in FILES[name][3]:
        for voice, found in (flite_clips() if source == "flite" else fish_clips(source)).items():
            clips.setdefault(voice, []).extend(found)
    return {voice: found[:3] for voice, found in clips.items()}


def scored_words(result: dict, reference: list[dict]) -> list[tuple[str, str]]:
    """(hypothesis label, reference speaker) of every word whose middle lies in a reference turn."""
    pairs = []
    for run in result["speakers"]:
        for word in run.get("words", []):
            middle = sum(word["timestamp"]) / 2
            truth = next((t["speaker"] for t in reference if t["start"] <= middle <= t["end"]), None)
            if truth is not None:
                pairs.append((word["speaker"], truth))
    return pairs


def majority(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Each diarization label's most frequent reference speaker (who that cluster really is)."""
    from collections import Counter

    counts = Counter(pairs)
    found: dict[str, str] = {}
    for (label, truth), _ in counts.most_common():
        found.setdefault(label, truth)
    return found


def scenario(centroids, prints, pairs, enrolled: set[str], threshold: float) -> dict:
    from whisper_endpoint.speakers.names import match

    names = {found.speaker: found.name for found in match(centroids, prints, threshold)}
    right = sum(1 for label, truth in pairs if names.get(label) == truth)
    enrolled_words = [truth for _, truth in pairs if truth in enrolled]
    truth_of = majority(pairs)
    wrong = sorted({f"{truth_of.get(label, label)} named {name}" for label, name in names.items()
                    if truth_of.get(label) != name})
    return {
        "words_named_right": round(sum(1 for label, truth in pairs if truth in enrolled
                                       and names.get(label) == truth) / max(len(enrolled_words), 1), 4),
        "words_of_enrolled_voices": len(enrolled_words),
        "unenrolled_named": sum(1 for label, name in names.items() if truth_of.get(label) not in enrolled),
        "wrong_names": wrong,
        "right_words_all": right,
    }


def similarities(centroids, prints, pairs) -> dict[str, list[float]]:
    import numpy as np

    truth_of = majority(pairs)
    right, wrong = [], []
    for label, vector in centroids.items():
        for name, voice in prints.items():
            value = float(np.dot(vector, voice) / np.linalg.norm(vector) / np.linalg.norm(voice))
            (right if truth_of.get(label) == name else wrong).append(round(value, 4))
    return {"right": sorted(right), "wrong": sorted(wrong)}


def run_file(handler, name: str, impostors: dict, threshold: float) -> dict:
    import numpy as np

    from whisper_endpoint.speakers.enrolment import voiceprints

    path, language, dev, sources = FILES[name]
    started = time.process_time()
    result = handler({"inputs": path.read_bytes(), "parameters": {
        "language": language, "return_speaker_embeddings": True, "return_speaker_words": True}})
    seconds = time.process_time() - started
    centroids = {label: np.asarray(v) for label, v in result["speaker_embeddings"]["speakers"].items()}
    reference = json.loads(path.with_suffix(".json").read_text())["turns"]
    pairs = scored_words(result, reference)
    cast = enrolment(name)
    report = {"dev": dev, "enrolled_from": sources, "cast": sorted(cast), "impostors": sorted(impostors),
              "speakers_found": len(centroids), "words_scored": len(pairs), "cpu_s": round(seconds, 1)}
    for clips in CLIPS_PER_NAME:  # three clips (the handler's most), one (OpenAI's one reference per name)
        enrolled = {voice: found[:clips] for voice, found in {**cast, **impostors}.items()}
        prints = voiceprints(enrolled, handler.diarizer.embed_voice)
        scenarios = {"all": scenario(centroids, prints, pairs, set(cast), threshold)}
        for left_out in cast:
            subset = {voice: vector for voice, vector in prints.items() if voice != left_out}
            scenarios[f"without {left_out}"] = scenario(centroids, subset, pairs, set(cast) - {left_out}, threshold)
        report[f"{clips}_clips"] = {"similarities": similarities(centroids, prints, pairs), "scenarios": scenarios}
    return report


def table(report: dict) -> str:
    """The README's table, from a saved report."""
    lines = ["| file | tuned on | speakers found | words named right (3 clips / 1 clip) | unenrolled voices "
             "named (3 / 1) | right pairs: lowest similarity | wrong pairs: highest |", "|---|---|---|---|---|---|---|"]
    for name, found in report["files"].items():
        cells = []
        for key in ("words_named_right", "unenrolled_named"):
            values = []
            for clips in CLIPS_PER_NAME:
                scenarios = found[f"{clips}_clips"]["scenarios"]
                if key == "words_named_right":
                    values.append(f"{100 * scenarios['all'][key]:.1f}%")
                else:
                    values.append(f"{sum(s[key] for s in scenarios.values())} of {len(scenarios)} runs")
            cells.append(" / ".join(values))
        sims = [found[f"{clips}_clips"]["similarities"] for clips in CLIPS_PER_NAME]
        lowest, highest = min(min(s["right"]) for s in sims), max(max(s["wrong"]) for s in sims)
        lines.append(f"| {name} | {'yes' if found['dev'] else 'no'} | {found['speakers_found']} / "
                     f"{len(found['cast'])} | {cells[0]} | {cells[1]} | {lowest:.3f} | {highest:.3f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from evaluation import parser, save

    options = parser("known_speakers")
    options.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    options.add_argument("--table", action="store_true", help="print the docs' table of --out and stop")
    args = options.parse_args(argv)
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return 0

    from whisper_endpoint.core.config import ModelSettings
    from whisper_endpoint.handler import EndpointHandler
    from whisper_endpoint.speakers.names import MATCH_THRESHOLD

    handler = EndpointHandler(settings=ModelSettings(asr_model="embedded:base", diarization_model="embedded"))
    impostors = impostor_clips()
    report = {"threshold": MATCH_THRESHOLD, "embedding_model": handler.diarizer.embedding_model, "files": {}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.files:  # the report is rewritten after each file: a long run leaves what it finished
        report["files"][name] = run_file(handler, name, impostors, MATCH_THRESHOLD)
        print(name, json.dumps(report["files"][name]), flush=True)
        dev = [report["files"][n][f"{c}_clips"]["similarities"] for n in report["files"] if FILES[n][2]
               for c in CLIPS_PER_NAME]
        if dev:
            report["dev_lowest_right"] = min(min(s["right"]) for s in dev if s["right"])
            report["dev_highest_wrong"] = max(max(s["wrong"]) for s in dev if s["wrong"])
        save("known_speakers", args.out, report, argv)
    print(json.dumps({k: v for k, v in report.items() if k != "files"}))
    return 0
