"""Transcribe local files through the same handler the endpoint serves.

    whisper-endpoint transcribe AUDIO [AUDIO...] [--json | --format srt] [--param key=value ...] [--timeline DIR]
                                [--no-progress]
    (or: python -m whisper_endpoint ...)

A file longer than one window draws a progress bar on stderr while it decodes (when stderr is a terminal):
the windows done, the stage (words, then speakers), the audio time done and the time left.

With DIARIZATION_MODEL set (e.g. ``embedded``), ``--timeline DIR`` also draws each file's speaker
timeline (turns per speaker over time, with what they said) as DIR/<file name>.png.

Settings come from the environment as on an endpoint (ASR_MODEL, DIARIZATION_MODEL, ...).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from whisper_endpoint import formats
from whisper_endpoint.adapters.http import dumps
from whisper_endpoint.cli.options import parameter
from whisper_endpoint.cli.progress import FileProgress
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.errors import EndpointError


def _print_text(path: str, result: dict) -> None:
    print(f"# {path} ({result['duration']:.1f} s, language {result['language']})")
    whole = [{"text": result["text"], "timestamp": [0.0, result["duration"]]}]
    for line in result["speakers"] or result["chunks"] or whole:
        start, end = line["timestamp"]
        who = f"{line['speaker']}: " if "speaker" in line else ""
        print(f"[{start:7.2f} -> {end:7.2f}] {who}{line['text'].strip()}")
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)


def _draw(result: dict, path: str, folder: Path) -> Path:
    from whisper_endpoint.cli.timeline_plot import draw_timeline
    from whisper_endpoint.core.types import SpeakerTurn

    folder.mkdir(parents=True, exist_ok=True)
    turns = [SpeakerTurn(t["start"], t["end"], t["speaker"]) for t in result["speaker_turns"]]
    return draw_timeline(turns, result["speakers"], folder / f"{Path(path).name}.png",
                         duration=result["duration"], title=Path(path).name)


def main(argv: list[str] | None = None, prog: str = "python -m whisper_endpoint") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0])
    parser.add_argument("audio", nargs="+", help="audio files (any FFmpeg format)")
    parser.add_argument("--json", action="store_true", help="print the endpoint's JSON response")
    parser.add_argument("--format", choices=list(formats.FORMATS), help="print each result in this format instead")
    parser.add_argument("--param", action="append", type=parameter, default=[], help="request parameter key=value")
    parser.add_argument("--timeline", type=Path, metavar="DIR", help="draw each file's speaker timeline as a PNG")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    parameters = dict(args.param)
    if args.format:  # what the format needs, unless asked otherwise
        parameters = {"return_timestamps": formats.timestamps_for(args.format, request=parameters),
                      **formats.parameters_for(args.format, parameters), **parameters}
    if args.timeline:
        parameters["return_speaker_turns"] = True
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    from whisper_endpoint.handler import EndpointHandler

    try:
        handler = EndpointHandler()
    except EndpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = 0
    for path in args.audio:
        progress = FileProgress(Path(path).name, enabled=not args.no_progress)
        try:
            with open(path, "rb") as file:
                result = handler.run({"inputs": file.read(), "parameters": parameters},
                                     progress.listen(DecodeContext()))
        except (OSError, EndpointError) as exc:
            print(f"error: {path}: {exc}", file=sys.stderr)
            status = 1
            continue
        finally:
            progress.close()
        if args.timeline and "speaker_turns" in result:
            print(f"timeline: {_draw(result, path, args.timeline)}", file=sys.stderr)
        if args.json:
            print(dumps(result, indent=2))
        elif args.format:
            context = formats.Context(file_id=Path(path).name, subtitles=formats.subtitle_options(parameters))
            body = formats.render(result, args.format, context).body
            print(body if isinstance(body, str) else dumps(body, indent=2), end="" if isinstance(body, str) else "\n")
        else:
            _print_text(path, result)
    return status


if __name__ == "__main__":
    sys.exit(main())
