"""One response from the channels of a multichannel recording, each transcribed on its own.

Pure functions, no model. A channel's entries are its segments labelled with the channel's name (or,
when the channel was diarized, its own speaker runs labelled ``name:SPEAKER_00``), each with its
``channel`` index. The response's ``speakers`` are every channel's entries in time order, where
consecutive entries of one speaker are joined: speech that overlaps on two channels stays two entries,
and a channel's long turn is not split by the other channel's silence. ``chunks`` are the channels'
chunks in time order, each with its ``channel``; ``text`` is the speakers' texts in that order.
"""

from __future__ import annotations

from dataclasses import dataclass

from whisper_endpoint.render import chunks as render_chunks
from whisper_endpoint.results import Segment, Transcript


@dataclass(frozen=True)
class ChannelResult:
    index: int
    name: str
    transcript: Transcript | None  # None: the channel was silent and not transcribed
    speakers: list[dict] | None = None  # the channel's diarized speaker runs; None when not diarized
    speaker_turns: list[dict] | None = None  # the channel's diarization turns (return_speaker_turns)


def response(
    results: list[ChannelResult], *, timestamps: str, duration: float, warnings: list[str],
    with_words: bool = False, turns: bool = False,
) -> dict:
    """The handler's response for a multichannel request (the single-channel response's keys, plus
    ``channels``: each channel's index, name, language and whether it was silent)."""
    transcribed = [r for r in results if r.transcript is not None]
    entries = [entry for r in transcribed for entry in channel_entries(r, with_words=with_words, duration=duration)]
    speakers = merge_entries(entries)
    chunks = [{**chunk, "channel": r.index} for r in transcribed
              for chunk in render_chunks(r.transcript, timestamps, duration)]
    chunks.sort(key=lambda chunk: (chunk["timestamp"][0], chunk["channel"]))
    result = {
        "text": " ".join(entry["text"] for entry in speakers),
        "chunks": chunks,
        "speakers": speakers,
        "language": _main_language(transcribed),
        "duration": round(duration, 3),
        "warnings": list(dict.fromkeys([*warnings, *(w for r in transcribed for w in r.transcript.warnings)])),
        "decoding": {**(transcribed[0].transcript.decoding if transcribed else {}), "channels": len(results)},
        "channels": [_summary(r) for r in results],
    }
    if turns:
        result["speaker_turns"] = speaker_turns(transcribed, speakers)
    return result


def channel_entries(result: ChannelResult, *, with_words: bool, duration: float) -> list[dict]:
    """One channel's speaker entries: its diarized runs, or its segments, labelled with the channel."""
    if result.speakers is not None:
        return [_relabelled(run, result) for run in result.speakers]
    entries = []
    for segment in result.transcript.segments:
        if not segment.text.strip():
            continue
        timed = segment.words or [segment]  # the words' times are tighter than the segment's
        entry = {"speaker": result.name, "channel": result.index, "text": segment.text.strip(),
                 "timestamp": _span(timed[0].start, timed[-1].end, duration)}
        if with_words:
            entry["words"] = _words(segment, result.name, duration)
        entries.append(entry)
    return entries


def merge_entries(entries: list[dict]) -> list[dict]:
    """All channels' entries by start time (ties: the lower channel); consecutive entries of one
    speaker on one channel joined into one."""
    merged: list[dict] = []
    for entry in sorted(entries, key=lambda e: (e["timestamp"][0], e["channel"])):
        last = merged[-1] if merged else None
        if last is not None and (last["speaker"], last["channel"]) == (entry["speaker"], entry["channel"]):
            last["text"] = f"{last['text']} {entry['text']}".strip()
            last["timestamp"] = [last["timestamp"][0], max(last["timestamp"][1], entry["timestamp"][1])]
            if "words" in last:
                last["words"] = [*last["words"], *entry.get("words", [])]
        else:
            merged.append({**entry, "timestamp": list(entry["timestamp"])})
    return merged


def speaker_turns(transcribed: list[ChannelResult], speakers: list[dict]) -> list[dict]:
    """Diarized channels' own turns, relabelled; else each speaker entry's span (one turn per entry)."""
    if transcribed and all(r.speaker_turns is not None for r in transcribed):
        turns = [_relabelled(turn, r) for r in transcribed for turn in r.speaker_turns]
    else:
        turns = [{"start": e["timestamp"][0], "end": e["timestamp"][1], "speaker": e["speaker"],
                  "channel": e["channel"]} for e in speakers]
    return sorted(turns, key=lambda turn: (turn["start"], turn["channel"]))


def _relabelled(item: dict, result: ChannelResult) -> dict:
    """A diarized run or turn (and its words) with the channel's name before its speaker label."""
    out = {**item, "speaker": f"{result.name}:{item['speaker']}", "channel": result.index}
    if "words" in item:
        out["words"] = [{**word, "speaker": f"{result.name}:{word['speaker']}"} for word in item["words"]]
    return out


def _words(segment: Segment, speaker: str, duration: float) -> list[dict]:
    return [{"text": w.text, "timestamp": _span(w.start, w.end, duration), "speaker": speaker}
            for w in segment.words or ()]


def _span(start: float, end: float, duration: float) -> list[float]:
    # Whisper's last timestamp can overshoot the audio; never report time past its end (as render.py).
    return [round(min(start, duration), 3), round(min(end, duration), 3)]


def _main_language(transcribed: list[ChannelResult]) -> str | None:
    """The language of the channel that said the most (channels detect theirs on their own)."""
    spoken = [r.transcript for r in transcribed if r.transcript.text]
    return max(spoken, key=lambda t: len(t.text)).language if spoken else None


def _summary(result: ChannelResult) -> dict:
    language = result.transcript.language if result.transcript is not None else None
    return {"channel": result.index, "name": result.name, "language": language, "silent": result.transcript is None}
