"""Build the JSON response once, at the end, from typed results.

Shape (the reference handler's, plus extras that clients ignore if they do not know them):
``{"text", "chunks": [{"text", "timestamp": [start, end]}], "speakers": [...], "language",
"language_probability", "duration", "warnings", "decoding"}``. With ``return_timestamps="word"`` the chunks
are words, as in the transformers pipeline; with ``"none"`` there are no chunks. With
``return_confidence`` word chunks carry ``probability`` and segment chunks ``avg_logprob``,
``no_speech_prob``, ``compression_ratio`` and ``temperature`` (OpenAI's names); word chunks then come
with ``segments`` (the segment chunks) beside them.
"""

from __future__ import annotations

from whisper_endpoint.core.types import Segment, Transcript, Word

CONFIDENCE_FIELDS = ("avg_logprob", "no_speech_prob", "compression_ratio", "temperature")


def chunks(transcript: Transcript, timestamps: str, duration: float, confidence: bool = False) -> list[dict]:
    def span(start: float, end: float) -> list[float]:
        # Whisper's last timestamp can overshoot the audio; never report time past its end.
        return [round(min(start, duration), 3), round(min(end, duration), 3)]

    if timestamps == "word":
        return [{"text": word.text, "timestamp": span(word.start, word.end),
                 **(_word_confidence(word) if confidence else {})} for word in transcript.words]
    if timestamps == "segment":
        return [{"text": seg.text, "timestamp": span(seg.start, seg.end),
                 **(segment_confidence(seg) if confidence else {})} for seg in transcript.segments]
    return []


def segment_confidence(segment: Segment) -> dict:
    """Whisper's view of a segment's window, with OpenAI's ``verbose_json`` names (None: not known)."""
    return {name: _rounded(getattr(segment, name)) for name in CONFIDENCE_FIELDS}


def _word_confidence(word: Word) -> dict:
    return {"probability": _rounded(word.probability)}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


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
    confidence: bool = False,
    speakers: list[dict] | None = None,
    speaker_turns: list[dict] | None = None,
    speaker_matches: list[dict] | None = None,
    speaker_embeddings: dict | None = None,
    warnings: list[str] | None = None,
) -> dict:
    result = {
        "text": transcript.text,
        "chunks": chunks(transcript, timestamps, duration, confidence),
        "speakers": speakers or [],
        "language": transcript.language,
        "language_probability": language_probability(transcript),
        "duration": round(duration, 3),
        "warnings": [*(warnings or []), *transcript.warnings],
        "decoding": transcript.decoding,
    }
    if confidence and timestamps == "word":  # the chunks are words: the segments' confidence comes beside them
        result["segments"] = chunks(transcript, "segment", duration, confidence)
    if speaker_turns is not None:
        result["speaker_turns"] = speaker_turns
    if speaker_matches is not None:  # known speakers: which speaker took which name, how similar
        result["speaker_matches"] = speaker_matches
    if speaker_embeddings is not None:
        result["speaker_embeddings"] = speaker_embeddings
    return result
