"""``python -m evaluation NAME [options]``: run one evaluation; ``--help`` lists them."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing downloads a model


def main(argv: list[str] | None = None) -> int:
    from evaluation import EVALUATIONS, module, summary

    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        width = max(map(len, EVALUATIONS))
        print("usage: python -m evaluation NAME [options]   (python -m evaluation NAME --help: its options)\n")
        print("Each writes results/NAME.json (--out elsewhere). Evaluations:")
        for name in EVALUATIONS:
            print(f"  {name:<{width}}  {summary(name)}")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in EVALUATIONS:
        print(f"no evaluation named {name!r}; one of: {', '.join(EVALUATIONS)}", file=sys.stderr)
        return 2
    return module(name).main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
