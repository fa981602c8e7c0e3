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

from whisper_endpoint.core.types import ChannelResult, MergedChannels, Segment, Speakers, Transcript, Word, span
from whisper_endpoint.pipeline import languages

CONFIDENCE_FIELDS = ("avg_logprob", "no_speech_prob", "compression_ratio", "temperature")


def chunks(transcript: Transcript, timestamps: str, duration: float, confidence: bool = False) -> list[dict]:
    if timestamps == "word":
        return [{"text": word.text, "timestamp": span(word.start, word.end, duration),
                 **(_word_confidence(word) if confidence else {}), **_language(seg)}
                for seg in transcript.segments for word in (seg.words or ())]
    if timestamps == "segment":
        return [{"text": seg.text, "timestamp": span(seg.start, seg.end, duration),
                 **(segment_confidence(seg) if confidence else {}), **_language(seg)} for seg in transcript.segments]
    return []


def _language(segment: Segment) -> dict:
    return {} if segment.language is None else {"language": segment.language}


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
    speakers: Speakers | None = None,
    warnings: list[str] | None = None,
) -> dict:
    """One signal's response: its transcript and, when diarized, its speakers."""
    result = {
        "text": transcript.text,
        "chunks": chunks(transcript, timestamps, duration, confidence),
        "speakers": languages.with_languages(speakers.runs, transcript.segments) if speakers else [],
        "language": transcript.language,
        "language_probability": language_probability(transcript),
        "languages": languages.summary(transcript.segments),
        "duration": round(duration, 3),
        "warnings": [*(warnings or []), *(speakers.warnings if speakers else []), *transcript.warnings],
        "decoding": transcript.decoding,
    }
    if confidence and timestamps == "word":  # the chunks are words: the segments' confidence comes beside them
        result["segments"] = chunks(transcript, "segment", duration, confidence)
    if speakers is not None and speakers.turns is not None:
        result["speaker_turns"] = speakers.turns
    if speakers is not None and speakers.matches is not None:  # known speakers: who took which name, how similar
        result["speaker_matches"] = speakers.matches
    if speakers is not None and speakers.embeddings is not None:
        result["speaker_embeddings"] = speakers.embeddings
    return result


def channels_response(
    merged: MergedChannels, *, timestamps: str, duration: float, confidence: bool = False,
    warnings: list[str] | None = None,
) -> dict:
    """A multichannel request's response: the single-channel response's keys (``text``: the turns' texts
    in time order; ``chunks``: the channels' chunks in time order, each with its ``channel``), plus
    ``channels`` (each channel's index, name, detected language and whether it was silent)."""
    transcribed, main = merged.transcribed, merged.main
    said = [*(warnings or []), *(w for r in transcribed if r.speakers for w in r.speakers.warnings),
            *(w for r in transcribed for w in r.transcript.warnings)]
    result = {
        "text": " ".join(entry["text"] for entry in merged.speakers),
        "chunks": _channel_chunks(transcribed, timestamps, duration, confidence),
        "speakers": merged.speakers,
        "language": main.language if main else None,
        "language_probability": language_probability(main) if main else None,
        "duration": round(duration, 3),
        "warnings": list(dict.fromkeys(said)),  # each channel may say the same
        "decoding": {**(transcribed[0].transcript.decoding if transcribed else {}), "channels": len(merged.channels)},
        "channels": [_summary(r) for r in merged.channels],
    }
    if confidence and timestamps == "word":  # as in response(): the segments' confidence beside the words
        result["segments"] = _channel_chunks(transcribed, "segment", duration, confidence)
    if merged.speaker_turns is not None:
        result["speaker_turns"] = merged.speaker_turns
    return result


def _channel_chunks(transcribed: list[ChannelResult], timestamps: str, duration: float, confidence: bool) -> list:
    found = [{**chunk, "channel": r.index} for r in transcribed
             for chunk in chunks(r.transcript, timestamps, duration, confidence)]
    return sorted(found, key=lambda chunk: (chunk["timestamp"][0], chunk["channel"]))


def _summary(result: ChannelResult) -> dict:
    transcript = result.transcript
    return {"channel": result.index, "name": result.name, "language": transcript.language if transcript else None,
            "language_probability": language_probability(transcript) if transcript else None,
            "silent": transcript is None}
