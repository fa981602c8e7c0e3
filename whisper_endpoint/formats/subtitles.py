"""Cues and subtitles: the transcript as timed lines (speaker runs when the audio was diarized, else
the segments), as SRT and WebVTT. Speakers label their cues: ``[SPEAKER_00] text`` in SRT, WebVTT's
voice tag ``<v SPEAKER_00>text`` in VTT."""

from __future__ import annotations

Cue = tuple[float, float, str, "str | None"]  # start, end, text, speaker


def cues(result: dict) -> list[Cue]:
    """Speaker runs when the audio was diarized, else the segments; empty lines left out."""
    if result.get("speakers"):
        lines = [(item["timestamp"], item["text"], item["speaker"]) for item in result["speakers"]]
    else:
        # Word chunks come with the segments beside them (``return_confidence``): a cue is a segment.
        segments = result["segments"] if "segments" in result else result["chunks"]
        lines = [(chunk["timestamp"], chunk["text"], None) for chunk in segments]
    out = []
    for (start, end), text, speaker in lines:
        if text.strip():
            start = float(start or 0.0)
            out.append((start, float(end if end is not None else start), text.strip(), speaker))
    return out


def srt(lines: list[Cue]) -> str:
    blocks = []
    for number, (start, end, text, speaker) in enumerate(lines, 1):
        label = f"[{speaker}] " if speaker else ""
        blocks.append(f"{number}\n{clock(start, ',')} --> {clock(end, ',')}\n{label}{_one_line(text)}\n")
    return "\n".join(blocks)


def vtt(lines: list[Cue]) -> str:
    blocks = ["WEBVTT\n"]
    for start, end, text, speaker in lines:
        text = _vtt_escape(_one_line(text))
        if speaker:
            text = f"<v {_vtt_escape(speaker)}>{text}"
        blocks.append(f"{clock(start, '.')} --> {clock(end, '.')}\n{text}\n")
    return "\n".join(blocks)


def clock(seconds: float, decimal: str) -> str:
    """``HH:MM:SS<decimal>mmm``, never negative."""
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _one_line(text: str) -> str:
    # A blank line inside a cue's text would end the cue there; tabs and spaces within a line stay.
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
