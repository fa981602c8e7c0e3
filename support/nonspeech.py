"""A corpus of non-speech audio (and a few files of speech after a long non-speech stretch), built offline.

    python -m scripts.nonspeech_corpus [--out DIR]     # default: <model cache>/nonspeech-corpus

Digital silence, room tone, white/pink/brown noise, mains hum, DTMF, ringback and busy tones
(numpy, fixed seed); hold music from Debian's ``asterisk-moh-opsound-wav`` (CC-BY-SA 3.0, opsound.org;
``apt-get install asterisk-moh-opsound-wav``), telephone band as the package ships it; other music
synthesised (piano-like arpeggios, a band loop with drums, a bowed melody with vibrato), because no
small Debian package carries free instrumental music as plain audio. The speech files put a clip of
audio/clips after 20-60 s of silence, room tone, noise or hold music.

Every file is 16 kHz mono 16-bit WAV, 5-120 s, written once into the cache folder (about 40 MB: not
committed). ``build()`` returns the items with what each holds; ``scripts.evaluate_nonspeech`` uses it.
"""

from __future__ import annotations

import argparse
import json
import wave
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

RATE = 16000
MOH = Path("/usr/share/asterisk/moh")
CLIPS = Path(__file__).resolve().parents[1] / "audio" / "clips"
VERSION = 1  # bump when the recipe changes: the cache folder is rebuilt


@dataclass(frozen=True)
class Item:
    name: str
    kind: str  # silence, room tone, noise, hum, tones, hold music, music, speech after non-speech
    seconds: float
    path: str
    speech: dict | None = None  # {"start", "end", "text"} for the files with speech


def _level(x: np.ndarray, dbfs: float) -> np.ndarray:
    rms = float(np.sqrt(np.mean(np.square(x)))) or 1.0
    return (x * (10 ** (dbfs / 20) / rms)).astype(np.float32)


def _coloured(rng, seconds: float, exponent: float) -> np.ndarray:
    """Noise whose power falls as 1/f**exponent (0 white, 1 pink, 2 brown)."""
    n = int(seconds * RATE)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / RATE)
    f[0] = f[1]
    return np.fft.irfft(spectrum / f ** (exponent / 2), n)


def _tone(freqs, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return sum(np.sin(2 * np.pi * f * t) for f in freqs)


def _cadence(freqs, pattern, seconds: float) -> np.ndarray:
    """A call-progress tone: ``pattern`` is (on, off, on, off...) seconds, repeated."""
    out, on = [], True
    while sum(map(len, out)) < seconds * RATE:
        for part in pattern:
            out.append(_tone(freqs, part) if on else np.zeros(int(part * RATE)))
            on = not on
    return np.concatenate(out)[: int(seconds * RATE)]


DTMF = {"1": (697, 1209), "2": (697, 1336), "3": (697, 1477), "4": (770, 1209), "5": (770, 1336),
        "6": (770, 1477), "7": (852, 1209), "8": (852, 1336), "9": (852, 1477), "*": (941, 1209),
        "0": (941, 1336), "#": (941, 1477)}


def _dtmf(rng, seconds: float) -> np.ndarray:
    """Digits keyed in bursts (80-150 ms each), with pauses between numbers, over a quiet line."""
    out = []
    while sum(map(len, out)) < seconds * RATE:
        for digit in rng.choice(list(DTMF), size=rng.integers(3, 11)):
            out += [_tone(DTMF[digit], rng.uniform(0.08, 0.15)), np.zeros(int(rng.uniform(0.06, 0.2) * RATE))]
        out.append(np.zeros(int(rng.uniform(0.8, 3.0) * RATE)))
    return np.concatenate(out)[: int(seconds * RATE)]


def _note(freq: float, seconds: float, harmonics=(1.0, 0.5, 0.25, 0.12), decay: float = 3.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    wave_ = sum(a * np.sin(2 * np.pi * freq * (k + 1) * t) for k, a in enumerate(harmonics))
    return wave_ * np.exp(-decay * t) * np.minimum(1, t / 0.005)


def _midi(n: float) -> float:
    return 440.0 * 2 ** ((n - 69) / 12)


CHORDS = [(60, 64, 67), (57, 60, 64), (53, 57, 60), (55, 59, 62)]  # C, Am, F, G


def _piano(rng, seconds: float) -> np.ndarray:
    out = np.zeros(int(seconds * RATE) + RATE)
    step, beat = 0.25, 0
    while beat * step < seconds:
        chord = CHORDS[(beat // 16) % 4]
        note = chord[beat % 3] + 12 * (beat % 6 >= 3)
        start = int(beat * step * RATE)
        sound = _note(_midi(note), 1.0)
        out[start: start + len(sound)] += sound
        beat += 1
    return out[: int(seconds * RATE)]


def _band(rng, seconds: float) -> np.ndarray:
    """Pad chords, a bass line and a drum loop (kick, snare noise, hi-hat), 100 bpm."""
    n, beat_s = int(seconds * RATE), 0.6
    out = np.zeros(n + 2 * RATE)
    for beat in range(int(seconds / beat_s) + 1):
        start, chord = int(beat * beat_s * RATE), CHORDS[(beat // 4) % 4]
        if beat % 4 == 0:
            pad = sum(_note(_midi(m), 4 * beat_s, (1.0, 0.3), decay=0.4) for m in chord)
            out[start: start + len(pad)] += 0.5 * pad
        bass = _note(_midi(chord[0] - 24), beat_s, (1.0, 0.6, 0.2), decay=4)
        out[start: start + len(bass)] += bass
        kick = _note(55, 0.25, (1.0,), decay=18) * 2
        if beat % 2 == 0:
            out[start: start + len(kick)] += kick
        else:
            snare = rng.standard_normal(int(0.15 * RATE)) * np.exp(-np.arange(int(0.15 * RATE)) / RATE * 25)
            out[start: start + len(snare)] += 0.6 * snare
        hat = np.diff(rng.standard_normal(int(0.05 * RATE) + 1)) * np.exp(-np.arange(int(0.05 * RATE)) / RATE * 80)
        half = start + int(beat_s / 2 * RATE)
        out[half: half + len(hat)] += 0.3 * hat
    return out[:n]


def _strings(rng, seconds: float) -> np.ndarray:
    """A slow melody, bowed (slow attack), with vibrato."""
    melody, out, t0 = [72, 74, 76, 79, 77, 76, 74, 72], [], 0.0
    note_s = 1.5
    for index in range(int(seconds / note_s) + 1):
        t = np.arange(int(note_s * RATE)) / RATE
        freq = _midi(melody[index % len(melody)]) * (1 + 0.006 * np.sin(2 * np.pi * 5.5 * t))
        phase = 2 * np.pi * np.cumsum(freq) / RATE
        tone = sum(a * np.sin(k * phase) for k, a in ((1, 1.0), (2, 0.5), (3, 0.33), (4, 0.25), (5, 0.2)))
        out.append(tone * np.minimum(1, t / 0.3) * np.minimum(1, (note_s - t) / 0.2))
        t0 += note_s
    return np.concatenate(out)[: int(seconds * RATE)]


def _room_tone(rng, seconds: float) -> np.ndarray:
    """Ventilation-like rumble (brown noise) with a faint 50 Hz hum and a little hiss."""
    rumble = _level(_coloured(rng, seconds, 2.0), -52)
    hum = _level(_tone((50, 100, 150), seconds), -66)
    hiss = _level(rng.standard_normal(int(seconds * RATE)), -70)
    return rumble + hum + hiss


def _hold_music(name: str, start: float, seconds: float) -> np.ndarray:
    from faster_whisper import decode_audio  # PyAV: the package's 8 kHz WAV resampled to 16 kHz

    path = MOH / f"{name}.wav"
    if not path.exists():
        raise SystemExit(f"{path} is missing: apt-get install asterisk-moh-opsound-wav")
    audio = decode_audio(str(path), sampling_rate=RATE)
    return _level(audio[int(start * RATE): int((start + seconds) * RATE)], -20)


def _clip(name: str) -> tuple[np.ndarray, str]:
    from faster_whisper import decode_audio

    refs = {item["file"]: item["text"] for item in json.loads((CLIPS / "refs.json").read_text())}
    return decode_audio(str(CLIPS / name), sampling_rate=RATE), refs[name]


def noise(seconds: float, exponent: float, dbfs: float, seed: int = 25) -> np.ndarray:
    """White (0), pink (1) or brown (2) noise at ``dbfs`` (RMS), fixed seed: for tests."""
    return _level(_coloured(np.random.default_rng(seed), seconds, exponent), dbfs)


def band_music(seconds: float, seed: int = 25) -> np.ndarray:
    """The band loop (pad chords, bass, drums) at -18 dBFS, fixed seed: for tests."""
    return _level(_band(np.random.default_rng(seed), seconds), -18)


def _recipes(rng):
    """(name, kind, make) for every file; ``make()`` returns samples, or (samples, speech)."""
    silence = lambda s: np.zeros(int(s * RATE))  # noqa: E731
    yield from [
        ("silence_5s", "silence", lambda: silence(5)),
        ("silence_30s", "silence", lambda: silence(30)),
        ("silence_120s", "silence", lambda: silence(120)),
        ("room_tone_20s", "room tone", lambda: _room_tone(rng, 20)),
        ("room_tone_75s", "room tone", lambda: _room_tone(rng, 75)),
        ("white_noise_10s", "noise", lambda: _level(_coloured(rng, 10, 0), -30)),
        ("white_noise_45s", "noise", lambda: _level(_coloured(rng, 45, 0), -20)),
        ("pink_noise_30s", "noise", lambda: _level(_coloured(rng, 30, 1), -25)),
        ("pink_noise_100s", "noise", lambda: _level(_coloured(rng, 100, 1), -25)),
        ("brown_noise_25s", "noise", lambda: _level(_coloured(rng, 25, 2), -25)),
        ("hum_50hz_30s", "hum", lambda: _level(_tone((50, 100, 150, 250), 30), -25)),
        ("hum_60hz_60s", "hum", lambda: _level(_tone((60, 120, 180, 300), 60) + 0.05 * _coloured(rng, 60, 0), -25)),
        ("dtmf_12s", "tones", lambda: _level(_dtmf(rng, 12), -20)),
        ("dtmf_40s", "tones", lambda: _level(_dtmf(rng, 40), -20)),
        ("ringback_us_30s", "tones", lambda: _level(_cadence((440, 480), (2, 4), 30), -22)),
        ("ringback_uk_60s", "tones", lambda: _level(_cadence((400, 450), (0.4, 0.2, 0.4, 2.0), 60), -22)),
        ("busy_us_20s", "tones", lambda: _level(_cadence((480, 620), (0.5, 0.5), 20), -22)),
        ("busy_eu_90s", "tones", lambda: _level(_cadence((425,), (0.5, 0.5), 90), -22)),
        ("hold_cold_day_30s", "hold music", lambda: _hold_music("macroform-cold_day", 20, 30)),
        ("hold_robot_dity_60s", "hold music", lambda: _hold_music("macroform-robot_dity", 40, 60)),
        ("hold_the_simplicity_25s", "hold music", lambda: _hold_music("macroform-the_simplicity", 90, 25)),
        ("hold_morning_coffee_73s", "hold music", lambda: _hold_music("manolo_camp-morning_coffee", 0, 73)),
        ("hold_system_120s", "hold music", lambda: _hold_music("reno_project-system", 60, 120)),
        ("music_piano_30s", "music", lambda: _level(_piano(rng, 30), -20)),
        ("music_band_75s", "music", lambda: _level(_band(rng, 75), -18)),
        ("music_strings_15s", "music", lambda: _level(_strings(rng, 15), -20)),
    ]
    after = "speech after non-speech"
    yield from [
        ("silence_25s_then_speech", after, lambda: _then_speech(silence(25), "asterisk_transfer.flac")),
        ("pink_20s_then_speech", after,
         lambda: _then_speech(_level(_coloured(rng, 20, 1), -45), "asterisk_followme_status.flac", 2)),
        ("room_tone_60s_then_speech", after,
         lambda: _then_speech(_room_tone(rng, 60), "asterisk_vm-rec-unv.flac", 4, _room_tone(rng, 4))),
        ("hold_40s_then_speech", after,
         lambda: _then_speech(_hold_music("macroform-cold_day", 100, 40), "asterisk_invalid.flac", 3)),
    ]


def _then_speech(before: np.ndarray, clip: str, tail_s: float = 0.0, tail: np.ndarray | None = None):
    speech, text = _clip(clip)
    after = tail if tail is not None else np.zeros(int(tail_s * RATE))
    start = len(before) / RATE
    return np.concatenate([before, speech, after]), {"start": start, "end": start + len(speech) / RATE, "text": text}


def _write(path: Path, samples: np.ndarray) -> None:
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm.tobytes())


def default_dir() -> Path:
    from whisper_endpoint.core.config import ModelSettings

    return ModelSettings().model_cache_dir / "nonspeech-corpus"


def build(out: Path | None = None) -> list[Item]:
    """Write the corpus into ``out`` unless a complete one of this VERSION is there; return its items."""
    out = out or default_dir()
    index = out / "index.json"
    if index.exists():
        saved = json.loads(index.read_text())
        if saved["version"] == VERSION and all(Path(i["path"]).exists() for i in saved["items"]):
            return [Item(**item) for item in saved["items"]]
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(25)
    items = []
    for name, kind, make in _recipes(rng):
        made = make()
        samples, speech = made if isinstance(made, tuple) else (made, None)
        path = out / f"{name}.wav"
        _write(path, samples)
        items.append(Item(name, kind, round(len(samples) / RATE, 3), str(path), speech))
    index.write_text(json.dumps({"version": VERSION, "items": [asdict(i) for i in items]}, indent=1))
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    for item in build(args.out):
        print(f"{item.seconds:7.1f} s  {item.kind:24s} {item.path}")


if __name__ == "__main__":
    main()
