"""How srt and vtt cues are cut: the subtitle fields of a request (``InferenceConfig`` extends them)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SubtitleOptions(BaseModel):
    """How srt and vtt cues are cut: the subtitle fields of ``InferenceConfig``, readable on their own by
    the renderers (``SubtitleOptions.model_validate(parameters)`` applies the same rules). The defaults are
    the broadcast rules for English (Netflix's timed-text style guide): 42 columns, 2 lines, 5/6 s to 7 s."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    subtitle_cues: Literal["readable", "segment"] = Field(
        "readable", description="srt/vtt: 'readable' cuts cues from the words by the broadcast rules of "
        "docs/subtitles.md (word timestamps "
        "are computed for it); 'segment' gives one cue per segment, or per speaker run when diarized.",
    )
    max_line_width: int = Field(
        42, ge=10, le=200, description="srt/vtt: columns a subtitle line may hold (East Asian wide characters count 2).",
    )
    max_line_count: int = Field(2, ge=1, le=10, description="srt/vtt: lines a cue may hold.")
    max_words_per_line: Optional[int] = Field(None, ge=1, le=100, description="srt/vtt: words a line may hold.")
    max_cue_duration: float = Field(
        7.0, ge=1.0, le=60.0, allow_inf_nan=False, description="srt/vtt: seconds a cue may last.",
    )
    min_cue_duration: float = Field(
        0.833, ge=0.0, le=10.0, allow_inf_nan=False,
        description="srt/vtt: a shorter cue takes time from the silence after, then before it (never over a "
        "neighbour), else joins its neighbour of the same speaker where they fit one cue.",
    )
    highlight_words: bool = Field(
        False, description="srt/vtt: one cue per spoken word, the word underlined (<u>word</u>) in its cue's text.",
    )

    @model_validator(mode="after")
    def _durations(self):
        if self.min_cue_duration > self.max_cue_duration:
            raise ValueError(f"min_cue_duration must not exceed max_cue_duration (here: {self.min_cue_duration} > "
                             f"{self.max_cue_duration})")
        return self
