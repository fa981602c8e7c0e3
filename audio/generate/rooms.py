"""Builds the rooms sets: our dialogues in real conditions (lines, codecs, rooms, noise, overlaps), exact truth.

    apt-get install -y sox flite fillets-ng-data fillets-ng-data-nl fillets-ng-data-cs lincity-ng-data \\
        asterisk-moh-opsound-wav
    pip install -r requirements-dev.txt   # numpy, soundfile, av (Opus), pyroomacoustics
    python audio/generate/rooms.py [--out out/rooms] [--part tuning untuned] [--conditions ...] [--force]

Deterministic (every random draw seeded by dialogue and condition), so the evaluation builds the sets on
demand into a folder outside git (default ``out/rooms``; about 100 MB of FLAC). Layout:
``OUT/PART/CONDITION/NAME.flac|.json|.rttm``; the untuned part's clean dialogues in ``OUT/sources``.
Sources and the tuning/untuned split: rooms_sources.py. The conditions (all written at 16 kHz, 16 bits,
peak -3 dBFS; the truth times are the clean dialogue's but in ``overlap``):

- studio: the clean dialogue.
- telephone_ulaw, telephone_alaw, telephone_gsm: line hiss at 35 dB SNR, then sox: 300-3400 Hz band,
  8 kHz, G.711 mu-law / A-law (8 bits) or GSM 06.10, decoded back to 16 kHz.
- opus_low: Opus at 8 kbps (libopus through PyAV), 16 kHz mono, decoded back.
- far_field: pyroomacoustics shoebox (image source method), RT60 0.3-0.9 s, 4-8 x 3-6 x 2.5-3.2 m, one
  mic, each speaker at its own place 1-3 m away; each speaker's room response is cut before its direct
  sound, so the truth times stay the direct sound's. Ambient hiss at 30 dB SNR.
- noise_0db, noise_5db, noise_10db, noise_20db: one noise kind per file (crowd, traffic, music, talkers,
  rotating over files and levels), SNR = speech power over the truth turns / noise power over the file.
- overlap: the dialogue's turns placed again: a third of speaker changes overlap by 0.3-1.5 s (at most
  half of either turn), the rest keep a 0.25-0.9 s gap; in turns over 4 s, half the time, the listener
  says a backchannel (its own voice) in the middle. Truth: every turn, backchannels included, start order.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rooms_sources as sources
from build import RATE, dithered

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "out" / "rooms"
CODECS = {"telephone_ulaw": ["-e", "u-law", "-b", "8"], "telephone_alaw": ["-e", "a-law", "-b", "8"],
          "telephone_gsm": []}
SNRS = {"noise_0db": 0, "noise_5db": 5, "noise_10db": 10, "noise_20db": 20}
CONDITIONS = ("studio", *CODECS, "opus_low", "far_field", *SNRS, "overlap")
OPUS_BITRATE = 8000
ROOM_SEEDS = {"tuning": 1000, "untuned": 2000}  # the parts' rooms are drawn from different seeds


def seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def active(turns: list[dict], length: int) -> np.ndarray:
    mask = np.zeros(length, bool)
    for turn in turns:
        mask[int(turn["start"] * RATE): int(turn["end"] * RATE)] = True
    return mask


def mix_at_snr(speech: np.ndarray, noise: np.ndarray, mask: np.ndarray, snr_db: float) -> np.ndarray:
    """Speech plus noise scaled so that speech power (where ``mask``) over noise power is ``snr_db``."""
    speech_power = np.mean(speech[mask] ** 2)
    noise_power = np.mean(noise ** 2)
    return speech + noise * np.sqrt(speech_power / (noise_power * 10 ** (snr_db / 10)))


def hiss(length: int, rng: np.random.Generator) -> np.ndarray:
    """Pink-ish noise: white noise through a one-pole low-pass."""
    from scipy.signal import lfilter

    return lfilter([1.0], [1.0, -0.9], rng.standard_normal(length))


def telephone(samples: np.ndarray, condition: str, work: Path) -> np.ndarray:
    """Through sox: the 300-3400 Hz band at 8 kHz, the codec, and back to 16 kHz."""
    clean, coded, back = work / "line_in.wav", work / "line.wav", work / "line_out.wav"
    soundfile.write(str(clean), samples, RATE, subtype="FLOAT")
    if condition == "telephone_gsm":
        coded = work / "line.gsm"  # sox's GSM 06.10 (8 kHz mono only)
    subprocess.run(["sox", str(clean), "-r", "8000", "-c", "1", *CODECS[condition], str(coded),
                    "sinc", "300-3400", "rate", "8000"], check=True, capture_output=True)
    subprocess.run(["sox", str(coded), "-b", "32", "-e", "floating-point", str(back), "rate", "16000"],
                   check=True, capture_output=True)
    decoded, rate = soundfile.read(str(back), dtype="float64")
    assert rate == RATE
    return _fit(decoded, len(samples))


def opus(samples: np.ndarray, bitrate: int = OPUS_BITRATE) -> np.ndarray:
    """Opus at ``bitrate`` (libopus through PyAV, Ogg), decoded back to 16 kHz."""
    import io

    import av

    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype(np.int16)[None, :]
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=RATE, layout="mono")
        stream.bit_rate = bitrate
        frame = av.AudioFrame.from_ndarray(pcm, format="s16", layout="mono")
        frame.sample_rate = RATE
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    buffer.seek(0)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
    with av.open(buffer) as container:
        parts = [out.to_ndarray().reshape(-1) for frame in container.decode(audio=0)
                 for out in resampler.resample(frame)]
    return _fit(np.concatenate(parts).astype(np.float64) / 32768, len(samples))


def _fit(samples: np.ndarray, length: int) -> np.ndarray:
    return np.pad(samples, (0, max(0, length - len(samples))))[:length]


def room(samples: np.ndarray, turns: list[dict], rng: random.Random) -> tuple[np.ndarray, dict]:
    """The dialogue as one mic hears it in a shoebox room, each speaker at its own place."""
    import pyroomacoustics as pra
    from scipy.signal import fftconvolve

    rt60 = rng.uniform(0.3, 0.9)
    size = [rng.uniform(4, 8), rng.uniform(3, 6), rng.uniform(2.5, 3.2)]
    energy, order = pra.inverse_sabine(rt60, size)
    mic = [size[0] / 2 + rng.uniform(-0.5, 0.5), size[1] / 2 + rng.uniform(-0.5, 0.5), 0.8]
    speakers = sorted({t["speaker"] for t in turns})
    places, out = {}, np.zeros(len(samples))
    for speaker in speakers:
        while True:  # a place 1-3 m from the mic, inside the room, 0.3 m from the walls
            distance, angle = rng.uniform(1, 3), rng.uniform(0, 2 * np.pi)
            place = [mic[0] + distance * np.cos(angle), mic[1] + distance * np.sin(angle), rng.uniform(1.1, 1.7)]
            if all(0.3 < place[i] < size[i] - 0.3 for i in range(2)):
                break
        shoebox = pra.ShoeBox(size, fs=RATE, materials=pra.Material(energy), max_order=min(order, 60))
        shoebox.add_source(place)
        shoebox.add_microphone(mic)
        shoebox.compute_rir()
        response = np.asarray(shoebox.rir[0][0])
        direct = int(np.argmax(np.abs(response)))  # the direct sound's peak: its time is the truth's
        track = samples * active([t for t in turns if t["speaker"] == speaker], len(samples))
        out += fftconvolve(track, response[direct:])[: len(samples)]
        places[speaker] = round(distance, 2)
    return out, {"rt60_s": round(rt60, 2), "room_m": [round(x, 2) for x in size], "distance_m": places}


def overlapped(pieces: list[tuple[str, str, np.ndarray]], rng: random.Random, bank: dict,
               share: float = 1 / 3) -> tuple[np.ndarray, list[dict]]:
    """Turns placed again with overlapping speaker changes and the listeners' backchannels."""
    clock, placed = rng.uniform(0.25, 0.9), []
    for index, (speaker, text, samples) in enumerate(pieces):
        if index and speaker != pieces[index - 1][0] and rng.random() < share:
            last = placed[-1]
            limit = min(1.5, 0.5 * (last[2] - last[1]), 0.5 * len(samples) / RATE)
            start = last[2] - min(rng.uniform(0.3, 1.5), limit) if limit >= 0.3 else clock + rng.uniform(0.25, 0.9)
        else:
            start = clock + (rng.uniform(0.25, 0.9) if index else 0.0)
        start = round(start, 3)
        end = round(start + len(samples) / RATE, 3)
        placed.append((speaker, start, end, text, samples, False))
        clock = max(clock, end)
        listeners = [p[0] for p in pieces if p[0] != speaker and bank.get(p[0])]
        if end - start > 4 and listeners and rng.random() < 0.5:
            listener = listeners[rng.randrange(len(listeners))]
            word, sound = bank[listener][rng.randrange(len(bank[listener]))]
            at = round(start + rng.uniform(0.35, 0.65) * (end - start - len(sound) / RATE), 3)
            placed.append((listener, at, round(at + len(sound) / RATE, 3), word, sound, True))
    signal = np.zeros(int((clock + 0.5) * RATE) + 1)
    for _, start, _, _, samples, _ in placed:
        at = round(start * RATE)
        signal[at: at + len(samples)] += samples
    turns = [{"speaker": s, "start": a, "end": b, "text": t, **({"backchannel": True} if bc else {})}
             for s, a, b, t, _, bc in sorted(placed, key=lambda p: (p[1], p[2]))]
    return signal, turns


def cut(samples: np.ndarray, turns: list[dict]) -> list[tuple[str, str, np.ndarray]]:
    return [(t["speaker"], t["text"], samples[round(t["start"] * RATE): round(t["end"] * RATE)])
            for t in turns]


def condition_audio(condition: str, name: str, part: str, out: Path, work: Path) -> tuple[np.ndarray, list[dict], dict]:
    """One condition of one dialogue: its samples, truth turns and what was drawn."""
    samples, turns = sources.read(sources.dialogue(name, out, work))
    rng = random.Random(seed(name, condition))
    noise_rng = np.random.default_rng(seed(name, condition, "hiss"))
    if condition == "studio":
        return samples, turns, {}
    if condition in CODECS:
        line = mix_at_snr(samples, hiss(len(samples), noise_rng), active(turns, len(samples)), 35)
        return telephone(line / np.abs(line).max() * 0.7, condition, work), turns, {"line_snr_db": 35}
    if condition == "opus_low":
        return opus(samples), turns, {"bitrate": OPUS_BITRATE}
    if condition == "far_field":
        rng = random.Random(seed(ROOM_SEEDS[part], name))
        wet, drawn = room(samples, turns, rng)
        return mix_at_snr(wet, hiss(len(wet), noise_rng), active(turns, len(wet)), 30), turns, drawn
    if condition in SNRS:
        index = list(sources.DIALOGUES).index(name) + list(SNRS).index(condition)
        kind = sources.NOISE_KINDS[index % len(sources.NOISE_KINDS)]
        noise, used = sources.noise(kind, part, len(samples), seed(name, condition, kind), work)
        mixed = mix_at_snr(samples, noise, active(turns, len(samples)), SNRS[condition])
        return mixed, turns, {"noise": kind, "snr_db": SNRS[condition], "recordings": used}
    bank = {speaker: sources.backchannels(name, speaker, work) for speaker in {t["speaker"] for t in turns}}
    signal, truth = overlapped(cut(samples, turns), rng, bank)
    changes = sum(a["speaker"] != b["speaker"] for a, b in itertools.pairwise(turns))
    return signal, truth, {"speaker_changes": changes, "backchannels": sum("backchannel" in t for t in truth)}


def write(folder: Path, name: str, samples: np.ndarray, turns: list[dict], about: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    peak = np.abs(samples).max() or 1.0
    pcm = dithered(samples * 10 ** (-3 / 20) / peak, np.random.default_rng(seed(name, folder.name)))
    soundfile.write(str(folder / f"{name}.flac"), pcm, RATE, subtype="PCM_16", format="FLAC")
    truth = {"file": f"{name}.flac", "duration": round(len(pcm) / RATE, 3), "condition": folder.name,
             "part": folder.parent.name, **about, "turns": turns}
    (folder / f"{name}.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False), encoding="utf-8")
    (folder / f"{name}.rttm").write_text("".join(
        f"SPEAKER {name} 1 {t['start']:.3f} {t['end'] - t['start']:.3f} <NA> <NA> {t['speaker']} <NA> <NA>\n"
        for t in turns), encoding="utf-8")



def build(conditions=CONDITIONS, parts=sources.PARTS, out: Path = OUT, names=None, force=False) -> list[Path]:
    """Writes what is missing (everything with ``force``); the FLAC paths of every file asked for."""
    if lacking := sources.missing():
        sys.exit("needs the Debian packages: " + " ".join(dict.fromkeys(lacking)))
    paths = []
    with tempfile.TemporaryDirectory() as work:
        for part in parts:
            for name in [n for n, (p, _) in sources.DIALOGUES.items() if p == part and (not names or n in names)]:
                for condition in conditions:
                    path = out / part / condition / f"{name}.flac"
                    if force or not path.with_suffix(".json").exists():
                        write(path.parent, name, *condition_audio(condition, name, part, out, Path(work)))
                        print(f"{part}/{condition}/{name}", flush=True)
                    paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--part", nargs="+", choices=sources.PARTS, default=list(sources.PARTS))
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    parser.add_argument("--files", nargs="+", choices=list(sources.DIALOGUES))
    parser.add_argument("--force", action="store_true", help="rewrite files already there")
    args = parser.parse_args()
    build(args.conditions, args.part, args.out, args.files, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
