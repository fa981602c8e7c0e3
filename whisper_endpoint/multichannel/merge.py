"""The channels of a multichannel recording, each transcribed on its own, merged into one set of turns.

Pure functions, no model. Every word of a channel has that channel's name as its speaker (or, when the
channel was diarized, ``name:SPEAKER_00``...). A channel's words form one turn until its speaker changes,
or until another channel starts speaking in a pause between two of its words: the other party took the
floor. Speech that overlaps a word (a "yeah" under a sentence) splits nothing, so overlapping speech on
two channels stays two entries. The turns of all channels, in time order, are the response's
``speakers``; ``pipeline/render.py`` adds the channels' chunks in time order, each with its ``channel``,
and the turns' texts in that order as ``text``.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from whisper_endpoint.core.types import ChannelResult, MergedChannels, Transcript, span


@dataclass(frozen=True)
class Spoken:
    """A word (or, without word times, a whole segment) of one channel, with its speaker."""

    start: float
    end: float
    text: str
    speaker: str
    channel: int


def merge_channels(results: list[ChannelResult], *, duration: float, with_words: bool = False,
                   turns: bool = False) -> MergedChannels:
    """The channels' turns in time order, the channel whose language is the response's, and (``turns``)
    the speaker turns; ``pipeline/render.py`` makes the response of them."""
    transcribed = [r for r in results if r.transcript is not None]
    speakers = [_entry(turn, with_words, duration) for turn in channel_turns([spoken_words(r) for r in transcribed])]
    return MergedChannels(results, speakers, _main_transcript(transcribed),
                          speaker_turns(transcribed, speakers) if turns else None)


def spoken_words(result: ChannelResult) -> list[Spoken]:
    """A channel's words in order, each with its speaker: the channel's name, or ``name:SPEAKER_00``."""
    if result.speakers is not None:
        # A run without words: the diarization merge's fallback, whole segments to speakers.
        return [Spoken(*w["timestamp"], w["text"], f"{result.name}:{w['speaker']}", result.index)
                for run in result.speakers.runs for w in (run.get("words") or [run])]
    return [Spoken(item.start, item.end, item.text, result.name, result.index)
            for segment in result.transcript.segments if segment.text.strip()
            for item in (segment.words or [segment])]


def channel_turns(channels: list[list[Spoken]]) -> list[list[Spoken]]:
    """Every channel's turns, in time order (ties: the lower channel)."""
    starts = sorted((word.start, word.channel) for words in channels for word in words)
    turns = [turn for words in channels for turn in _split(words, starts)]
    return sorted(turns, key=lambda turn: (turn[0].start, turn[0].channel))


def _split(words: list[Spoken], starts: list[tuple[float, int]]) -> list[list[Spoken]]:
    """One channel's words cut where its speaker changes or another channel starts in a pause."""
    turns: list[list[Spoken]] = []
    for word in words:
        if turns and word.speaker == turns[-1][-1].speaker and not _floor_taken(turns[-1][-1], word, starts):
            turns[-1].append(word)
        else:
            turns.append([word])
    return turns


def _floor_taken(before: Spoken, after: Spoken, starts: list[tuple[float, int]]) -> bool:
    """Whether another channel's word starts in the pause between two words of one channel."""
    if after.start <= before.end:
        return False
    index = bisect_left(starts, (before.end, -1))
    while index < len(starts) and starts[index][0] < after.start:
        if starts[index][1] != before.channel:
            return True
        index += 1
    return False


def speaker_turns(transcribed: list[ChannelResult], speakers: list[dict]) -> list[dict]:
    """Diarized channels' own turns, relabelled; else each speaker entry's span."""
    if transcribed and all(r.speakers is not None and r.speakers.turns is not None for r in transcribed):
        turns = [{**t, "speaker": f"{r.name}:{t['speaker']}", "channel": r.index}
                 for r in transcribed for t in r.speakers.turns]
    else:
        turns = [{"start": e["timestamp"][0], "end": e["timestamp"][1], "speaker": e["speaker"],
                  "channel": e["channel"]} for e in speakers]
    return sorted(turns, key=lambda turn: (turn["start"], turn["channel"]))


def _entry(turn: list[Spoken], with_words: bool, duration: float) -> dict:
    entry = {"speaker": turn[0].speaker, "channel": turn[0].channel, "text": "".join(w.text for w in turn).strip(),
             "timestamp": span(turn[0].start, max(w.end for w in turn), duration)}
    if with_words:
        entry["words"] = [{"text": w.text, "timestamp": span(w.start, w.end, duration), "speaker": w.speaker}
                          for w in turn]
    return entry


def _main_transcript(transcribed: list[ChannelResult]) -> Transcript | None:
    """The channel that said the most: its language is the response's (each channel detects its own)."""
    spoken = [r.transcript for r in transcribed if r.transcript.text]
    return max(spoken, key=lambda t: len(t.text)) if spoken else None
