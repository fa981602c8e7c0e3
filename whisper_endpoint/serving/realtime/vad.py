"""Turn detection for live audio: faster-whisper's Silero VAD run frame by frame, its state carried
from one append to the next, and OpenAI's ``server_vad`` rules (threshold, prefix padding, silence).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

FRAME = 512  # samples at 16 kHz (32 ms): the frame Silero VAD scores
_CONTEXT = 64  # samples of the previous frame the model sees before each frame


class StreamingVAD:
    """Speech probabilities of consecutive 512-sample frames of one stream.

    faster-whisper's ``SileroVADModel.__call__`` starts each call from a zero state; a live stream
    arrives 100 ms at a time, so this keeps the recurrent state and the 64-sample context itself and
    calls the same ONNX session, which scores a batch of frames as one sequence.
    """

    def __init__(self):
        from faster_whisper.vad import get_vad_model  # cached: one ONNX session for every stream

        self._session = get_vad_model().session
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(_CONTEXT, dtype=np.float32)
        self._pending = np.zeros(0, dtype=np.float32)

    def probabilities(self, samples: np.ndarray) -> np.ndarray:
        """One probability per whole frame completed by ``samples`` (16 kHz float32)."""
        audio = np.concatenate([self._pending, samples])
        count = len(audio) // FRAME
        self._pending = audio[count * FRAME :]
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        frames = audio[: count * FRAME].reshape(count, FRAME)
        contexts = np.concatenate([self._context[None], frames[:-1, -_CONTEXT:]])
        self._context = frames[-1, -_CONTEXT:].copy()
        batch = np.concatenate([contexts, frames], axis=1)
        output, self._h, self._c = self._session.run(None, {"input": batch, "h": self._h, "c": self._c})
        return np.asarray(output, dtype=np.float32).reshape(-1)


@dataclass
class TurnEvent:
    kind: str  # "started" or "stopped"
    sample: int  # started: where speech began (padding not included); stopped: where it ended


class TurnDetector:
    """OpenAI's server VAD rules over frame probabilities: speech starts at the first frame at or
    above ``threshold``; it stops after ``silence_duration_ms`` of frames below it."""

    def __init__(self, threshold: float, silence_duration_ms: int):
        self.threshold = threshold
        self.silence_frames = max(1, round(silence_duration_ms * 16 / FRAME))
        self.vad = StreamingVAD()
        self.position = 0  # samples scored so far
        self.speaking = False
        self._quiet = 0  # frames below the threshold since the last speech frame
        self._recent: deque = deque(maxlen=1000)  # (frame start, probability): the last 32 s

    def feed(self, samples: np.ndarray) -> list[TurnEvent]:
        events = []
        for probability in self.vad.probabilities(samples):
            start, self.position = self.position, self.position + FRAME
            self._recent.append((start, probability))
            if probability >= self.threshold:
                if not self.speaking:
                    self.speaking = True
                    events.append(TurnEvent("started", start))
                self._quiet = 0
            elif self.speaking:
                self._quiet += 1
                if self._quiet >= self.silence_frames:
                    self.speaking = False
                    events.append(TurnEvent("stopped", self.position - self._quiet * FRAME))
        return events

    @property
    def pausing(self) -> bool:
        """Speech was going on and the last frame was quiet: the turn may be about to end."""
        return self.speaking and self._quiet > 0

    def quietest(self, start: int, end: int) -> int:
        """The middle of the least speech-like frame between ``start`` and ``end`` (``end`` if none
        was scored): where a forced cut splits the fewest words."""
        frames = [(p, first) for first, p in self._recent if first >= start and first + FRAME <= end]
        return min(frames)[1] + FRAME // 2 if frames else end

    def reset(self) -> None:
        """After a clear or a forced commit: speech, if it goes on, starts again from here."""
        self.speaking, self._quiet = False, 0
