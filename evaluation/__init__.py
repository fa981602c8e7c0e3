"""The evaluations: ``python -m evaluation NAME [options]`` (``--help`` lists them).

Each measures one capability on the repository's audio with the field's metrics (``support.metrics``)
and writes ``results/NAME.json`` through one writer (``support.results``: what made it, on which commit,
machine and threads). They run outside the test suite; the docs cite their results files.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
from pathlib import Path

from support import results

# name -> module: the names users type, in the order --help lists them
EVALUATIONS = {
    "asr": "asr",
    "transformers": "transformers_backend",
    "nonspeech": "nonspeech",
    "confidence": "confidence",
    "diarization": "diarization",
    "speaker_attribution": "speaker_attribution",
    "overlaps": "overlaps",
    "speaker_count": "speaker_count",
    "known_speakers": "known_speakers",
    "speaker_library": "speaker_library",
    "multichannel": "multichannel",
    "mixed": "mixed",
    "subtitles": "subtitles",
    "word_times": "word_times",
    "realtime": "realtime",
    "live_speakers": "live_speakers",
    "senko": "senko",
    "whisperx": "whisperx",
    "rooms": "rooms",
    "loops": "loops",
    "responses": "responses",
}


def module(name: str):
    return importlib.import_module(f"evaluation.{EVALUATIONS[name]}")


def summary(name: str) -> str:
    """The first sentence of the evaluation's docstring: what --help says of it."""
    paragraph = (module(name).__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def parser(name: str, description: str | None = None) -> argparse.ArgumentParser:
    """The evaluation's argument parser, with ``--out`` (default: results/NAME.json)."""
    made = argparse.ArgumentParser(prog=f"python -m evaluation {name}",
                                   description=description or summary(name))
    made.add_argument("--out", type=Path, default=results.RESULTS / f"{name}.json",
                      help=f"results file (default: results/{name}.json)")
    return made


def save(name: str, out: Path, data: dict, argv: list[str]) -> Path:
    """Write ``data`` to ``out`` with the command that made it."""
    command = " ".join(["HF_HUB_OFFLINE=1 .venv/bin/python -m evaluation", name, *map(shlex.quote, argv)])
    path = results.write(out, data, command)
    print(f"written to {path}")
    return path
