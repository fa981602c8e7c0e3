"""How readable the subtitles are: the share of cues that keep each rule, one cue per segment (before)
against readable cues (after), on the repository's dialogues with diarization; and what the word
timestamps that readable cues need cost.

    .venv/bin/python -m scripts.evaluate_subtitles [--model embedded:base] [--out results/subtitles.json]

Each file is transcribed once with word timestamps and each speaker's words (what srt and vtt ask
for), diarized by the embedded pipeline, and rendered both ways from that one response. The rules
(``SubtitleOptions``' defaults, Netflix's for English): at most 2 lines, each at most 42 columns,
0.833-7 s on screen, at most 20 characters a second, one speaker. The words of the cues must equal
the transcript's words (nothing lost or repeated). Cost: CPU seconds of the same request with segment
and with word timestamps (the ASR alone, the median of 3 interleaved rounds), one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from whisper_endpoint import formats  # noqa: E402
from whisper_endpoint.core.config import ModelSettings, SubtitleOptions  # noqa: E402
from whisper_endpoint.formats.readable import _width, words_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "audio"
FILES = ("dialogues/flite_meeting.flac", "dialogues/fillets_cave.flac", "dialogues/fillets_barrel.flac",
         "ja/kokoro_ja_meeting.flac")
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


def rule_shares(cues: list[dict], words, options: SubtitleOptions) -> dict:
    kept = dict.fromkeys(RULES, 0)
    for cue in cues:
        duration = cue["end"] - cue["start"]
        characters = sum(len(line) for line in cue["lines"])
        inside = {w.speaker for w in words if cue["start"] - 0.01 <= (w.start + w.end) / 2 <= cue["end"] + 0.01}
        kept["lines"] += len(cue["lines"]) <= options.max_line_count
        kept["width"] += all(_width(line) <= options.max_line_width for line in cue["lines"])
        kept["duration"] += options.min_cue_duration - 1e-3 <= duration <= options.max_cue_duration + 1e-3
        kept["reading_speed"] += characters / max(duration, 1e-3) <= 20.0 + 1e-6
        kept["one_speaker"] += len(inside) <= 1
    return {"cues": len(cues), **{rule: round(100 * count / max(len(cues), 1), 1) for rule, count in kept.items()}}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="embedded:base")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "subtitles.json")
    args = parser.parse_args()
    from whisper_endpoint.handler import EndpointHandler

    settings = ModelSettings(asr_model=args.model, diarization_model="embedded", cpu_threads=1)
    handler = EndpointHandler(settings=settings)
    options = SubtitleOptions()
    handler({"inputs": (AUDIO / FILES[0]).read_bytes()})  # warm-up: the first request's one-off costs
    rows = []
    for name in FILES:
        audio = (AUDIO / name).read_bytes()
        cost = word_timestamp_cost(handler, audio)
        result = handler({"inputs": audio, "parameters": {"return_timestamps": "word", "return_speaker_words": True}})
        words = words_of(result)
        spaced = result["language"] not in ("ja", "zh")
        row = {"file": f"audio/{name}", "language": result["language"], "asr_cpu_s": cost,
               "word_timestamps_cost": round(cost["word"] / cost["segment"], 3)}
        for mode in ("segment", "readable"):
            body = formats.render(result, "srt", formats.Context(subtitles=SubtitleOptions(subtitle_cues=mode))).body
            cues = parse_srt(body)
            row[mode] = rule_shares(cues, words, options)
            said = [t for cue in cues for line in cue["lines"] for t in tokens(line, spaced)]
            expected = tokens(result["text"], spaced)
            row[mode]["words_equal_transcript"] = said == expected
            if said != expected:  # where they part, for the reader
                at = next((i for i, (a, b) in enumerate(zip(said, expected)) if a != b), min(len(said), len(expected)))
                row[mode]["first_difference"] = {"cues": said[max(0, at - 3):at + 3],
                                                 "transcript": expected[max(0, at - 3):at + 3]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps({
        "command": "python -m scripts.evaluate_subtitles", "model": args.model, "diarization": "embedded",
        "rules": {"max_line_count": options.max_line_count, "max_line_width": options.max_line_width,
                  "min_cue_duration": options.min_cue_duration, "max_cue_duration": options.max_cue_duration,
                  "max_reading_cps": 20.0},
        "files": rows,
    }, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
