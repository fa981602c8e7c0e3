"""The rooms generator's outputs agree with their truth, on a 5 s excerpt of a committed dialogue: the
SNR asked is the SNR made, the telephone codecs and Opus round-trip at the length and time of the input
(through 8 kHz for the lines), and the overlap condition's truth has overlaps and backchannels."""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from support import rooms_generator
from support.paths import ROOT

pytestmark = pytest.mark.skipif(not shutil.which("sox"), reason="needs Debian's sox")


@pytest.fixture(scope="module")
def rooms():
    pytest.importorskip("soundfile")
    return rooms_generator.load()


@pytest.fixture(scope="module")
def excerpt(rooms):
    samples, turns = rooms.sources.read(ROOT / "audio" / "dialogues" / "flite_meeting.flac")
    return samples[: 5 * rooms.RATE], turns


def test_noise_is_mixed_at_the_snr_asked(rooms, excerpt):
    samples, turns = excerpt
    mask = rooms.active(turns, len(samples))
    noise = np.random.default_rng(1).standard_normal(len(samples)) * np.linspace(0.5, 1.5, len(samples))
    for snr in (0, 5, 10, 20):
        added = rooms.mix_at_snr(samples, noise, mask, snr) - samples
        made = 10 * np.log10(np.mean(samples[mask] ** 2) / np.mean(added ** 2))
        assert abs(made - snr) < 0.5, (snr, made)


@pytest.mark.parametrize("condition", ["telephone_ulaw", "telephone_alaw", "telephone_gsm"])
def test_a_line_goes_through_8_khz_and_comes_back_in_band_and_in_time(rooms, excerpt, condition, tmp_path):
    samples = excerpt[0] * 0.5
    line = rooms.telephone(samples, condition, tmp_path)
    coded = tmp_path / ("line.gsm" if condition == "telephone_gsm" else "line.wav")
    rate = subprocess.run(["soxi", "-r", str(coded)], capture_output=True, text=True, check=True).stdout
    assert int(rate) == 8000
    assert len(line) == len(samples)
    spectrum = np.abs(np.fft.rfft(line)) ** 2
    frequencies = np.fft.rfftfreq(len(line), 1 / rooms.RATE)
    assert spectrum[frequencies > 3800].sum() < 0.01 * spectrum.sum()  # nothing above the band
    band = _band(samples, tmp_path)  # the same band, no codec: the line must keep its time
    assert _lag(band, line) == 0 and np.corrcoef(band, line)[0, 1] > 0.8


def test_opus_comes_back_at_the_same_time(rooms, excerpt):
    samples = excerpt[0] * 0.5
    coded = rooms.opus(samples)
    assert len(coded) == len(samples)
    assert abs(_lag(samples, coded)) <= 2 and np.corrcoef(samples, coded)[0, 1] > 0.6


def test_the_overlap_condition_overlaps_and_adds_backchannels(rooms, excerpt):
    samples, _ = excerpt
    quarter = len(samples) // 4
    pieces = [("a" if i % 2 == 0 else "b", f"turn {i}", samples[i * quarter: (i + 1) * quarter]) for i in range(4)]
    pieces[0] = ("a", "a long turn", np.concatenate([samples, samples]))  # 10 s: room for a backchannel
    bank = {"b": [("yeah", samples[:4000])], "a": [("mm", samples[:4000])]}
    for seed in range(5):
        signal, turns = rooms.overlapped(pieces, random.Random(seed), bank, share=1.0)
        starts = [t["start"] for t in turns]
        assert starts == sorted(starts)
        assert len(signal) >= max(t["end"] for t in turns) * rooms.RATE
        spoken = [t for t in turns if "backchannel" not in t]
        overlaps = [b["start"] - a["end"] for a, b in itertools.pairwise(spoken)]
        assert all(-1.5 - 1e-9 <= gap < -0.3 + 1e-9 or gap >= 0.25 for gap in overlaps), overlaps
        assert sum(gap < 0 for gap in overlaps) >= 1
    assert any("backchannel" in t for seed in range(5)
               for t in rooms.overlapped(pieces, random.Random(seed), bank, share=1.0)[1])


def _band(samples: np.ndarray, work: Path) -> np.ndarray:
    import soundfile

    soundfile.write(str(work / "in.wav"), samples, 16000, subtype="FLOAT")
    subprocess.run(["sox", str(work / "in.wav"), str(work / "band.wav"), "sinc", "300-3400"], check=True,
                   capture_output=True)
    return soundfile.read(str(work / "band.wav"), dtype="float64")[0]


def _lag(a: np.ndarray, b: np.ndarray, most: int = 400) -> int:
    """The shift of ``b`` against ``a`` (samples) that correlates best."""
    lags = range(-most, most + 1)
    scores = [np.dot(a[most: -most], b[most + lag: len(b) - most + lag]) for lag in lags]
    return lags[int(np.argmax(scores))]
