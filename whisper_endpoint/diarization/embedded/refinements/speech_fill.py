"""A second speech detector for the embedded pipeline: speech pyannote left unlabelled gets a speaker.

pyannote's segmentation-3.0 stops a turn when the voice starts to decay: on the game dialogues in
``audio/`` every turn lost its last ~0.5 s (reverberant decay, 20-30 dB below the voice),
and pauses inside a sentence split turns. Silero VAD at a low threshold marks those frames as
speech while staying off true silence. Each piece of Silero speech that no turn covers is given
to the speaker of the nearest turn in time (the previous turn on a tie: decay follows the voice
that made it). Assigning long pieces by CAM++ embedding instead changed nothing on the test files
(no uncovered piece was long enough), so it is not done.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pyannote.core import Annotation, Segment, Timeline

from whisper_endpoint.core.types import SAMPLE_RATE

# 640 s: whole Silero windows, two of faster-whisper's batches. Silero carries a state from window
# to window; starting it afresh at a block moves region edges by up to ~0.15 s for a minute or two.
BLOCK_SAMPLES = 512 * 20000


@dataclass(frozen=True)
class SpeechFillOptions:
    """Attributes:
    threshold: Silero speech probability above which a frame is speech (0.5 is Silero's default;
      low values catch decaying and quiet speech).
    min_silence_ms: shorter silences do not end a Silero speech region.
    pad_ms: padding added on both sides of Silero regions.
    min_piece: uncovered pieces shorter than this (seconds) are left alone.
    """

    threshold: float = 0.2
    min_silence_ms: int = 100
    pad_ms: int = 30
    min_piece: float = 0.05


def speech_regions(samples: np.ndarray, options: SpeechFillOptions) -> Timeline:
    """Silero VAD (the ONNX model bundled with faster-whisper) over the whole input, a block at a time:
    faster-whisper's VAD holds about 3.5 copies of what it is given (27 min: 0.4 GB more; 4 h: 3 GB),
    blocks keep that flat. Regions cut at a block's edge touch and are joined again."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    vad = VadOptions(
        threshold=options.threshold,
        min_silence_duration_ms=options.min_silence_ms,
        speech_pad_ms=options.pad_ms,
        min_speech_duration_ms=0,
    )
    found = []
    for start in range(0, len(samples), BLOCK_SAMPLES):
        block = get_speech_timestamps(samples[start: start + BLOCK_SAMPLES], vad, sampling_rate=SAMPLE_RATE)
        found += [Segment((start + item["start"]) / SAMPLE_RATE, (start + item["end"]) / SAMPLE_RATE)
                  for item in block]
    return Timeline(found).support()


def fill(
    annotation: Annotation,
    pieces: list[Segment],
    assign: Callable[[Segment], str | None],
) -> Annotation:
    """``annotation`` plus each piece under the label ``assign`` gives it (None: left out)."""
    filled = annotation.copy()
    for piece in pieces:
        label = assign(piece)
        if label is not None:
            filled[piece, filled.new_track(piece)] = label
    return filled.support()  # merges touching turns of the same speaker


def uncovered(regions: Timeline, annotation: Annotation, min_piece: float) -> list[Segment]:
    """Parts of ``regions`` no turn of ``annotation`` covers."""
    covered = annotation.get_timeline().support()
    return [piece for piece in regions.extrude(covered) if piece.duration >= min_piece]


def nearest_speaker(exclusive: Annotation) -> Callable[[Segment], str | None]:
    """The label of the turn nearest to a piece; None when there are no turns at all."""
    turns = list(exclusive.itertracks(yield_label=True))

    def distance(turn: Segment, piece: Segment) -> tuple[float, int]:
        if turn.end <= piece.start + 1e-6:
            return piece.start - turn.end, 0  # a previous turn wins ties
        if turn.start >= piece.end - 1e-6:
            return turn.start - piece.end, 1
        return 0.0, 0

    def assign(piece: Segment) -> str | None:
        if not turns:
            return None  # no speaker was found at all: nothing to attach speech to
        return min(turns, key=lambda track: distance(track[0], piece))[2]

    return assign
