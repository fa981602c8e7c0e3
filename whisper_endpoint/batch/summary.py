"""Progress while a batch runs (files, and audio hours per wall hour) and the closing summary."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from tqdm import tqdm

from whisper_endpoint.batch.work import Outcome


@dataclass
class Summary:
    total: int
    skipped: int
    done: int = 0
    failed: int = 0
    audio_s: float = 0.0
    wall_s: float = 0.0
    failures: list[dict] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        if outcome.status == "done":
            self.done += 1
            self.audio_s += outcome.audio_s
        else:
            self.failed += 1
            self.failures.append({"file": outcome.relative, "error": outcome.error})

    @property
    def real_time_factor(self) -> float | None:
        """Wall seconds per audio second (below 1 is faster than real time)."""
        return self.wall_s / self.audio_s if self.audio_s else None

    def as_dict(self) -> dict:
        rtf = self.real_time_factor
        return {
            "files": self.total, "done": self.done, "failed": self.failed, "skipped": self.skipped,
            "audio_s": round(self.audio_s, 3), "wall_s": round(self.wall_s, 3),
            "real_time_factor": round(rtf, 4) if rtf is not None else None,
            "audio_minutes_per_wall_minute": round(1 / rtf, 3) if rtf else None,
            "failures": self.failures,
        }

    def text(self) -> str:
        rtf = self.real_time_factor
        speed = f", real-time factor {rtf:.3f} ({1 / rtf:.1f}x real time)" if rtf else ""
        lines = [
            f"{self.done} done, {self.failed} failed, {self.skipped} skipped of {self.total} files; "
            f"{self.audio_s / 60:.1f} audio minutes in {self.wall_s:.1f} s{speed}"
        ]
        lines += [f"failed: {f['file']}: {f['error']}" for f in self.failures]
        return "\n".join(lines)


class Progress:
    """A tqdm bar over the files to do, with the audio hours decoded per wall hour."""

    def __init__(self, summary: Summary, todo: int, enabled: bool = True):
        self.summary = summary
        self.started = time.perf_counter()
        self.bar = tqdm(total=todo, unit="file", disable=not enabled, dynamic_ncols=True)

    def update(self, outcome: Outcome) -> None:
        self.summary.add(outcome)
        self.summary.wall_s = time.perf_counter() - self.started
        hours = self.summary.audio_s / 3600
        rate = hours / (self.summary.wall_s / 3600) if self.summary.wall_s else 0.0
        self.bar.set_postfix_str(f"{hours:.2f} audio-h, {rate:.1f} audio-h/h, {self.summary.failed} failed")
        self.bar.update(1)

    def close(self) -> None:
        self.summary.wall_s = time.perf_counter() - self.started
        self.bar.close()
