"""The speaker timeline PNG: valid files for every input shape, sized for the audio's length."""

import struct

import pytest

from whisper_endpoint.cli.timeline_plot import draw_timeline
from whisper_endpoint.core.types import SpeakerTurn, Word
from whisper_endpoint.speakers.merge import assign_speakers, smooth, speaker_runs

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path):
    """(width, height) from the IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def conversation(seconds):
    turns, words, t, k = [], [], 0.0, 0
    while t < seconds:
        length = 2.0 + (k * 7) % 11
        turns.append(SpeakerTurn(t, min(t + length, seconds), f"SPEAKER_0{k % 3}"))
        t, k = t + length + 0.3, k + 1
    t = 0.0
    while t < seconds - 0.5:
        words.append(Word(t, t + 0.35, " word." if int(t * 10) % 9 == 0 else " word"))
        t += 0.45
    return turns, words


@pytest.mark.parametrize("shape", ["labeled", "runs", "plain", "none"])
def test_timeline_is_a_png_for_each_input_shape(tmp_path, shape):
    turns, words = conversation(60.0)
    labeled = smooth(assign_speakers(words, turns))
    items = {"labeled": labeled, "runs": speaker_runs(labeled), "plain": words, "none": []}[shape]
    path = draw_timeline(turns, items, tmp_path / "timeline.png", duration=60.0, title=shape)
    width, height = png_size(path)
    assert path.stat().st_size > 5_000
    lanes = 4 if shape == "plain" else 3  # words without speakers get a lane of their own
    assert (width, height) == (800, 100 + 80 * lanes)  # 8 in minimum width, 1 in + 0.8 in a lane, at 100 dpi


def test_long_audio_is_capped_in_width_and_empty_input_still_draws(tmp_path):
    turns, words = conversation(900.0)
    path = draw_timeline(turns, speaker_runs(assign_speakers(words, turns)), tmp_path / "long.png", duration=900.0)
    assert png_size(path)[0] == 3200  # 32 in at 100 dpi
    assert path.stat().st_size > 20_000
    empty = draw_timeline([], [], tmp_path / "empty.png")
    assert png_size(empty) == (800, 180)
