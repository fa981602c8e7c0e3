"""Where the repository's folders are."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AUDIO = ROOT / "audio"
CLIPS = AUDIO / "clips"
RESULTS = ROOT / "results"
