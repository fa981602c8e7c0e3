"""A progress bar on stderr for a file being transcribed: the audio time done, the stage, the time left.

It listens to the progress the handler already reports (``DecodeContext``): after each batch of windows
while the words are decoded, then once the speakers are being found. Drawn only where a person can see
it (stderr is a terminal) and only for audio longer than one window; nothing is printed otherwise.
"""

from __future__ import annotations

import sys

from tqdm import tqdm

from whisper_endpoint.core.decode_context import DECODING, DIARIZING, DecodeContext, Progress
from whisper_endpoint.core.types import clock

STAGES = {DECODING: "words", DIARIZING: "speakers"}  # what a person reads, by the handler's stage


class FileProgress:
    """``listen(context)`` once per file; ``close()`` when its result is in."""

    def __init__(self, name: str, *, enabled: bool, stream=None):
        self.name, self.stream = name, stream or sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.bar: tqdm | None = None

    def listen(self, context: DecodeContext) -> DecodeContext:
        if self.enabled:
            context.listen(self._reported)
        return context

    def _reported(self, progress: Progress) -> None:
        if progress.windows_total < 2:  # one window: over before a bar would help
            return
        if self.bar is None:
            self.bar = tqdm(total=progress.windows_total, unit="window", file=self.stream, dynamic_ncols=True,
                            leave=False, desc=self.name)
        heard = max((segment.end for segment in progress.segments), default=0.0)
        self.bar.set_postfix_str(f"{STAGES.get(progress.stage, progress.stage)}, {clock(heard)} of audio done",
                                 refresh=False)
        self.bar.update(progress.windows_done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


