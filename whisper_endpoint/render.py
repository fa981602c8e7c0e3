"""Build the JSON response once, at the end, from typed results.

Shape (the reference handler's, plus extras that clients ignore if they do not know them):
``{"text", "chunks": [{"text", "timestamp": [start, end]}], "speakers": [...], "language",
"language_probability", "duration", "warnings", "decoding"}``. With ``return_timestamps="word"`` the chunks are words, as
in the transformers pipeline; with ``"none"`` there are no chunks.
"""

from __future__ import annotations

from whisper_endpoint.results import Transcript


def chunks(transcript: Transcript, timestamps: str, duration: float) -> list[dict]:
    def span(start: float, end: float) -> list[float]:
        # Whisper's last timestamp can overshoot the audio; never report time past its end.
        return [round(min(start, duration), 3), round(min(end, duration), 3)]

    if timestamps == "word":
        return [{"text": word.text, "timestamp": span(word.start, word.end)} for word in transcript.words]
    if timestamps == "segment":
        return [{"text": seg.text, "timestamp": span(seg.start, seg.end)} for seg in transcript.segments]
    return []


def language_probability(transcript: Transcript) -> float | None:
    """How sure the language detection was; None when the language was not detected (given, or an
    English-only model)."""
    probability = transcript.language_probability
    return None if probability is None else round(float(probability), 3)


def response(
    transcript: Transcript,
    *,
    timestamps: str,
    duration: float,
    speakers: list[dict] | None = None,
    speaker_turns: list[dict] | None = None,
    speaker_matches: list[dict] | None = None,
    speaker_embeddings: dict | None = None,
    warnings: list[str] | None = None,
) -> dict:
    result = {
        "text": transcript.text,
        "chunks": chunks(transcript, timestamps, duration),
        "speakers": speakers or [],
        "language": transcript.language,
        "language_probability": language_probability(transcript),
        "duration": round(duration, 3),
        "warnings": [*(warnings or []), *transcript.warnings],
        "decoding": transcript.decoding,
    }
    if speaker_turns is not None:
        result["speaker_turns"] = speaker_turns
    if speaker_matches is not None:  # known speakers: which speaker took which name, how similar
        result["speaker_matches"] = speaker_matches
    if speaker_embeddings is not None:
        result["speaker_embeddings"] = speaker_embeddings
    return result
