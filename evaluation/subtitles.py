"""How readable the subtitles are: the share of cues that keep each rule, one cue per segment (before)
against readable cues (after), on the repository's dialogues with diarization and a monologue; why each
readable cue that reads too fast does; and what the word timestamps that readable cues need cost.

    python -m evaluation subtitles [--model embedded:base] [--out results/subtitles.json]

Each file is transcribed once with word timestamps and each speaker's words (what srt and vtt ask
for), diarized by the embedded pipeline, and rendered both ways from that one response. The rules
(``SubtitleOptions``' defaults, Netflix's for English): at most 2 lines, each at most 42 columns,
0.833-7 s on screen, at most 20 characters a second, one speaker. Characters are counted as Netflix
counts them: every character of the text, spaces and punctuation included, the line break and the
speaker label left out. The words of the cues must equal the transcript's words (nothing lost or
repeated).

A readable cue over 20 characters a second is put down to the speech or to its timing (issue 60): the
speech, when even the longest time the cue could have had is too short for its text (from a lead-in of
``MAX_LEAD_IN_S`` before its first word, or the end of the previous cue's speech, to the start of the
next cue's speech, gaps of ``MIN_GAP_S`` kept, at most ``max_cue_duration``); the timing otherwise. A
cue under ``min_cue_duration`` is listed with that longest time too: under it, the audio left no room.

Cost: CPU seconds of the same request with segment and with word timestamps (the ASR alone, the median
of 3 interleaved rounds), one thread, on the first four files.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from whisper_endpoint import formats  # noqa: E402
from whisper_endpoint.core.config import ModelSettings, SubtitleOptions  # noqa: E402
from whisper_endpoint.formats.cue_timing import MAX_LEAD_IN_S, MAX_READING_CPS, MIN_GAP_S  # noqa: E402
from whisper_endpoint.formats.readable import _width, words_of  # noqa: E402

from support.paths import AUDIO  # noqa: E402
COSTED = ("dialogues/flite_meeting.flac", "dialogues/fillets_cave.flac", "dialogues/fillets_barrel.flac",
          "ja/kokoro_ja_meeting.flac")
MONOLOGUE = "clips/*.flac"  # the 30 Asterisk prompts of one speaker, in refs.json's order, 0.5 s apart
FILES = (*COSTED, "long/fillets_long.flac", MONOLOGUE)
RULES = ("lines", "width", "duration", "reading_speed", "one_speaker")


def parse_srt(body: str) -> list[dict]:
    cues = []
    for block in body.strip().split("\n\n"):
        lines = block.split("\n")
        start, end = (_seconds(clock) for clock in lines[1].split(" --> "))
        text_lines = lines[2:]
        speaker = None
        match = re.match(r"\[([^\]]+)\] ", text_lines[0])
        if match:  # the speaker label is outside the measured text
            speaker, text_lines = match.group(1), [text_lines[0][match.end():], *text_lines[1:]]
        cues.append({"start": start, "end": end, "lines": text_lines, "speaker": speaker})
    return cues


def _seconds(clock: str) -> float:
    hours, minutes, rest = clock.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest.replace(",", "."))


def characters(cue: dict) -> int:
    """Netflix's count: every character of the text, spaces and punctuation too; not the line break."""
    return sum(len(line) for line in cue["lines"])


def rule_shares(cues: list[dict], words, options: SubtitleOptions) -> dict:
    kept = dict.fromkeys(RULES, 0)
    for cue in cues:
        duration = cue["end"] - cue["start"]
        inside = {w.speaker for w in words if cue["start"] - 0.01 <= (w.start + w.end) / 2 <= cue["end"] + 0.01}
        kept["lines"] += len(cue["lines"]) <= options.max_line_count
        kept["width"] += all(_width(line) <= options.max_line_width for line in cue["lines"])
        kept["duration"] += options.min_cue_duration - 1e-3 <= duration <= options.max_cue_duration + 1e-3
        kept["reading_speed"] += characters(cue) / max(duration, 1e-3) <= MAX_READING_CPS + 1e-6
        kept["one_speaker"] += len(inside) <= 1
    shortest = min((cue["end"] - cue["start"] for cue in cues), default=None)
    return {"cues": len(cues), **{rule: round(100 * count / max(len(cues), 1), 1) for rule, count in kept.items()},
            "shortest_cue_s": None if shortest is None else round(shortest, 3)}


def cue_words(cues: list[dict], words) -> list[list]:
    """Each cue's words: the cues hold the transcript's words in order, so each takes words until it has
    as many characters (spaces aside) as its text."""
    out, index = [], 0
    for cue in cues:
        wanted, taken = len("".join("".join(cue["lines"]).split())), []
        while wanted > 0 and index < len(words):
            taken.append(words[index])
            wanted -= len("".join(words[index].text.split()))
            index += 1
        out.append(taken)
    return out


def longest_possible(spoken: list[tuple[float, float]], index: int, options: SubtitleOptions) -> float:
    """The longest a cue could be shown, its neighbours' speech left alone: from a lead-in before its
    first word (or the previous cue's last word) to the next cue's first word, gaps kept."""
    start, _ = spoken[index]
    earliest = min(start, max(0.0, start - MAX_LEAD_IN_S, spoken[index - 1][1] + MIN_GAP_S if index else 0.0))
    latest = max(start, spoken[index + 1][0] - MIN_GAP_S) if index + 1 < len(spoken) else math.inf
    return min(latest - earliest, options.max_cue_duration)


def timing_faults(cues: list[dict], words, options: SubtitleOptions) -> dict:
    """Every cue over the reading speed, put down to the speech (even its longest possible time reads too
    fast) or to the timing; every cue under the minimum duration, with the room the audio left it."""
    spoken = [(group[0].start, group[-1].end) if group else (cue["start"], cue["end"])
              for cue, group in zip(cues, cue_words(cues, words))]
    fast, short = [], []
    for index, cue in enumerate(cues):
        duration, count = cue["end"] - cue["start"], characters(cue)
        possible = longest_possible(spoken, index, options)
        entry = {"cue": index + 1, "start": cue["start"], "end": cue["end"], "characters": count,
                 "speech_s": round(spoken[index][1] - spoken[index][0], 3), "possible_s": round(possible, 3)}
        if count / max(duration, 1e-3) > MAX_READING_CPS + 1e-6:
            speech = count / max(possible, 1e-3) > MAX_READING_CPS + 1e-6
            fast.append({**entry, "cps": round(count / max(duration, 1e-3), 1),
                         "kind": "speech" if speech else "timing"})
        if duration < options.min_cue_duration - 1e-3:
            room = possible >= options.min_cue_duration - 1e-3
            short.append({**entry, "duration_s": round(duration, 3), "kind": "timing" if room else "no_room"})
    kinds = ("speech", "timing")
    return {"reading_speed_failures": {kind: sum(f["kind"] == kind for f in fast) for kind in kinds},
            "short_cues_with_room": sum(s["kind"] == "timing" for s in short),
            "too_fast": fast, "too_short": short}


def pooled(rows: list[dict], mode: str) -> dict:
    """The rules' shares over every cue of the files, the shortest cue and the failures by kind."""
    total = sum(row[mode]["cues"] for row in rows)
    out = {"cues": total, **{rule: round(sum(row[mode][rule] * row[mode]["cues"] for row in rows) / max(total, 1), 1)
                             for rule in RULES},
           "shortest_cue_s": min(row[mode]["shortest_cue_s"] for row in rows)}
    if mode == "readable":
        out["reading_speed_failures"] = {kind: sum(row[mode]["reading_speed_failures"][kind] for row in rows)
                                         for kind in ("speech", "timing")}
        out["short_cues_with_room"] = sum(row[mode]["short_cues_with_room"] for row in rows)
    return out


def tokens(text: str, spaced: bool) -> list[str]:
    return text.split() if spaced else list("".join(text.split()))


def word_timestamp_cost(handler, audio: bytes, rounds: int = 3) -> dict:
    """Median CPU seconds of the ASR alone (no diarization) with segment and with word timestamps,
    interleaved so that the machine's load falls on both alike."""
    seconds = {"segment": [], "word": []}
    for _ in range(rounds):
        for timestamps in seconds:
            began = time.process_time()
            handler({"inputs": audio, "parameters": {"return_timestamps": timestamps, "diarize": False}})
            seconds[timestamps].append(time.process_time() - began)
    return {name: round(statistics.median(values), 2) for name, values in seconds.items()}


def monologue() -> dict:
    """The Asterisk prompts as one monologue: one speaker, 0.5 s of silence after each."""
    import numpy as np

    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.types import SAMPLE_RATE

    refs = json.loads((AUDIO / "clips" / "refs.json").read_text())
    pieces = []
    for ref in refs:
        pieces += [decode_file((AUDIO / "clips" / ref["file"]).read_bytes(), max_seconds=60).samples,
                   np.zeros(SAMPLE_RATE // 2, dtype=np.float32)]
    return {"array": np.concatenate(pieces), "sampling_rate": SAMPLE_RATE}


def main(argv: list[str]) -> int:
    from evaluation import parser, save
    from whisper_endpoint.handler import EndpointHandler

    choices = parser("subtitles")
    choices.add_argument("--model", default="embedded:base")
    args = choices.parse_args(argv)

    settings = ModelSettings(asr_model=args.model, diarization_model="embedded", cpu_threads=1)
    handler = EndpointHandler(settings=settings)
    options = SubtitleOptions()
    handler({"inputs": (AUDIO / FILES[0]).read_bytes()})  # warm-up: the first request's one-off costs
    rows = []
    for name in FILES:
        audio = monologue() if name == MONOLOGUE else (AUDIO / name).read_bytes()
        result = handler({"inputs": audio, "parameters": {"return_timestamps": "word", "return_speaker_words": True}})
        words = words_of(result)
        spaced = result["language"] not in ("ja", "zh")
        row = {"file": f"audio/{name}", "language": result["language"], "duration_s": round(result["duration"], 1)}
        if name in COSTED:
            cost = word_timestamp_cost(handler, audio)
            row.update(asr_cpu_s=cost, word_timestamps_cost=round(cost["word"] / cost["segment"], 3))
        for mode in ("segment", "readable"):
            body = formats.render(result, "srt", formats.Context(subtitles=SubtitleOptions(subtitle_cues=mode))).body
            cues = parse_srt(body)
            row[mode] = rule_shares(cues, words, options)
            if mode == "readable":
                row[mode].update(timing_faults(cues, words, options))
            said = [t for cue in cues for line in cue["lines"] for t in tokens(line, spaced)]
            expected = tokens(result["text"], spaced)
            row[mode]["words_equal_transcript"] = said == expected
            if said != expected:  # where they part, for the reader
                at = next((i for i, (a, b) in enumerate(zip(said, expected)) if a != b), min(len(said), len(expected)))
                row[mode]["first_difference"] = {"cues": said[max(0, at - 3):at + 3],
                                                 "transcript": expected[max(0, at - 3):at + 3]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    spoken = [row for row in rows if row["language"] not in ("ja", "zh")]  # 20 characters a second is for them
    save("subtitles", args.out, {
        "model": args.model, "diarization": "embedded",
        "rules": {"max_line_count": options.max_line_count, "max_line_width": options.max_line_width,
                  "min_cue_duration": options.min_cue_duration, "max_cue_duration": options.max_cue_duration,
                  "max_reading_cps": MAX_READING_CPS, "characters": "Netflix's: all but the line break and the label",
                  "min_gap_s": MIN_GAP_S, "max_lead_in_s": MAX_LEAD_IN_S},
        "files": rows,
        "pooled": {"files": [row["file"] for row in spoken],
                   **{mode: pooled(spoken, mode) for mode in ("segment", "readable")}},
    }, argv)
    return 0
