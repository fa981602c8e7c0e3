"""Cues and subtitles: the transcript as timed lines, as SRT and WebVTT.

``cues`` are the segments, or the speaker runs when the audio was diarized (txt, tsv and diarized_json
read them); srt and vtt read ``subtitle_cues``: readable cues cut from the words (``readable``), or those
same segment cues with ``subtitle_cues="segment"``. Speakers label their cues: ``[SPEAKER_00] text`` in
SRT, WebVTT's voice tag ``<v SPEAKER_00>text`` in VTT; ``highlight_words`` underlines with ``<u>``.
"""

from __future__ import annotations

from whisper_endpoint.core.config import SubtitleOptions
from whisper_endpoint.formats.readable import Cue as Subtitle
from whisper_endpoint.formats.readable import readable_cues, span_times, words_of

Cue = tuple[float, float, str, "str | None"]  # start, end, text, speaker


def cues(result: dict) -> list[Cue]:
    """Speaker runs when the audio was diarized, else the segments; empty lines left out."""
    return [cue for cue, _ in cues_with_languages(result)]


def cues_with_languages(result: dict) -> list[tuple[Cue, "str | None"]]:
    """``cues``, each with its language (None where the response does not say one; issue 58)."""
    if result.get("speakers"):
        lines = [(item["timestamp"], item["text"], item["speaker"], item.get("language"))
                 for item in result["speakers"]]
    else:
        # Word chunks come with the segments beside them (``return_confidence``): a cue is a segment.
        segments = result["segments"] if "segments" in result else result["chunks"]
        lines = [(chunk["timestamp"], chunk["text"], None, chunk.get("language")) for chunk in segments]
    return [((*span_times(timestamp), text.strip(), speaker), language)
            for timestamp, text, speaker, language in lines if text.strip()]


def subtitle_cues(result: dict, options: SubtitleOptions) -> list[Subtitle]:
    if options.subtitle_cues == "segment":
        return [Subtitle(start, end, _one_line(text), speaker) for start, end, text, speaker in cues(result)]
    return readable_cues(words_of(result), options)


def srt(subtitles: list[Subtitle]) -> str:
    blocks = []
    for number, cue in enumerate(subtitles, 1):
        label = f"[{cue.speaker}] " if cue.speaker else ""
        blocks.append(f"{number}\n{clock(cue.start, ',')} --> {clock(cue.end, ',')}\n{label}{_marked(cue, str)}\n")
    return "\n".join(blocks)


def vtt(subtitles: list[Subtitle]) -> str:
    blocks = ["WEBVTT\n"]
    for cue in subtitles:
        text = _marked(cue, _vtt_escape)
        if cue.speaker:
            text = f"<v {_vtt_escape(cue.speaker)}>{text}"
        blocks.append(f"{clock(cue.start, '.')} --> {clock(cue.end, '.')}\n{text}\n")
    return "\n".join(blocks)


def _marked(cue: Subtitle, escape) -> str:
    """The cue's text, escaped for its format, with the spoken word underlined (``highlight_words``)."""
    if cue.underline is None:
        return escape(cue.text)
    start, end = cue.underline
    return f"{escape(cue.text[:start])}<u>{escape(cue.text[start:end])}</u>{escape(cue.text[end:])}"


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
