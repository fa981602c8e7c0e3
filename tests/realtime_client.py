"""A live-transcription client for the tests: real audio from audio/ as PCM16 frames over a
real WebSocket (the ``websockets`` library), and the server's events collected as they come."""

from __future__ import annotations

import base64
import json
import threading
import time
from pathlib import Path

import numpy as np
from websockets.sync.client import connect

AUDIO = Path(__file__).resolve().parents[1] / "audio"


def silence(seconds: float, rate: int) -> np.ndarray:
    return np.zeros(int(seconds * rate), dtype=np.int16)


def append(samples: np.ndarray) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(samples.tobytes()).decode()})


class Session:
    """One open WebSocket; a thread keeps every received event (with its arrival time) in ``events``."""

    def __init__(self, url: str, **options):
        self._connection = connect(url, open_timeout=10, **options)
        self.ws = self._connection.__enter__()
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for message in self.ws:
                event = json.loads(message)
                event["_received"] = time.monotonic()
                self.events.append(event)
        except Exception:  # closed
            pass

    def send(self, event: dict | str) -> None:
        self.ws.send(event if isinstance(event, str) else json.dumps(event))

    def stream(self, samples: np.ndarray, rate: int, *, speed: float, frame_s: float = 0.1,
               real_time_until=None) -> None:
        """``samples`` in ``frame_s`` appends, ``speed`` times faster than real time; at real-time
        pace while ``real_time_until()`` is false (so a slow machine still decodes while it streams)."""
        step = int(frame_s * rate)
        for start in range(0, len(samples), step):
            self.send(append(samples[start : start + step]))
            slow = real_time_until is not None and not real_time_until()
            time.sleep(frame_s if slow else frame_s / speed)

    def wait_for(self, kind: str, count: int = 1, timeout: float = 30) -> list[dict]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.of(kind)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(found)} of {count} {kind} events after {timeout} s; got "
                                   f"{[e['type'] for e in self.events]}")
            time.sleep(0.02)

    def of(self, kind: str) -> list[dict]:
        return [event for event in list(self.events) if event["type"] == kind]

    def close_code(self, timeout: float = 5) -> int | None:
        """The code the server closed the connection with (None if still open after ``timeout``)."""
        self._reader.join(timeout)
        return None if self._reader.is_alive() else self.ws.close_code

    def close(self) -> None:
        self._connection.__exit__(None, None, None)
        self._reader.join(timeout=5)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
