"""Plain files for downloads and batch output: txt (the text by speaker turn), tsv (one cue a row) and
RTTM (the diarization's own turns, pyannote's format)."""

from __future__ import annotations

from collections.abc import Iterable

from whisper_endpoint.core.types import SpeakerTurn
from whisper_endpoint.formats.subtitles import cues
from whisper_endpoint.speakers.merge import valid_turns

TSV_HEADER = "start\tend\tspeaker\ttext\n"


def txt(result: dict) -> str:
    """One paragraph per speaker turn (``SPEAKER_00: text``), or per segment without speakers."""
    lines = [f"{speaker}: {text}" if speaker else text for _, _, text, speaker in cues(result)]
    return "\n\n".join(lines) + "\n" if lines else ""


def tsv(result: dict) -> str:
    """``start end speaker text``, tab-separated, seconds with millisecond precision, a header first."""
    rows = [f"{start:.3f}\t{end:.3f}\t{_cell(speaker or '')}\t{_cell(text)}\n" for start, end, text, speaker in cues(result)]
    return TSV_HEADER + "".join(rows)


def rttm(result: dict, file_id: str) -> str:
    """The response's ``speaker_turns`` (``return_speaker_turns``) as RTTM lines."""
    turns = [SpeakerTurn(t["start"], t["end"], t["speaker"]) for t in result.get("speaker_turns", [])]
    return to_rttm(turns, file_id)


def to_rttm(turns: Iterable[SpeakerTurn], file_id: str) -> str:
    """Turns as RTTM lines (pyannote's format), sorted by start. Whitespace in the file id and in
    labels becomes "_" (RTTM fields are space-separated); invalid turns are left out."""
    uri = _no_spaces(file_id) or "audio"
    return "".join(
        f"SPEAKER {uri} 1 {t.start:.3f} {t.end - t.start:.3f} <NA> <NA> {_no_spaces(t.speaker)} <NA> <NA>\n"
        for t in valid_turns(turns)
    )


def _cell(text: str) -> str:
    return " ".join(text.split())  # tabs and line breaks would break the row


def _no_spaces(text: str) -> str:
    return "_".join(text.split())
