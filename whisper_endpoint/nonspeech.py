"""No words over silence, noise or music (``drop_non_speech``, on by default).

Whisper decodes something from any audio: "you" from 30 s of digital silence, a repeated syllable
from pink noise. Around the backend's transcription, on both backends and both decoding paths:

1. the VAD (backends/speech.py) finds no speech: nothing is decoded; the response has no text, a
   "no speech found" warning and ``decoding.mode: "no speech"`` (and diarization does not run);
2. a segment none of whose words (without word times: no part of which) lies over the VAD's speech
   is dropped: text made up over the silence before or after speech;
3. a segment Whisper itself marks as no speech is dropped: its no-speech probability over
   ``NO_SPEECH_THRESHOLD`` with an average token log-probability under ``LOGPROB_THRESHOLD``, Whisper's
   rule, which faster-whisper's sequential decoder applies to each window and its batched pipeline
   (all long audio) does not.

``drop_non_speech: false`` keeps everything the backend decoded, as before. ``keeps`` judges one
segment, so a step that sees segments one at a time can apply the same rule.
"""

from __future__ import annotations

from whisper_endpoint.backends.speech import Speech, find_speech
from whisper_endpoint.config import InferenceConfig
from whisper_endpoint.results import Segment, Transcript

NO_SPEECH_MODE = "no speech"
NO_SPEECH_THRESHOLD = 0.6  # Whisper's and faster-whisper's defaults
LOGPROB_THRESHOLD = -1.0
NO_SPEECH_WARNING = "no speech found: the voice activity detector heard none, so nothing was transcribed " \
                    "(drop_non_speech: false decodes it anyway)"


def transcribe(asr, samples, config: InferenceConfig) -> Transcript:
    """``asr.transcribe(samples, config)`` without what it decoded over non-speech."""
    if not config.drop_non_speech:
        return asr.transcribe(samples, config)
    speech = find_speech(samples)
    if not speech:
        return _nothing(asr, config)
    transcript = asr.transcribe(samples, config)
    kept = [segment for segment in transcript.segments if keeps(segment, speech)]
    dropped = len(transcript.segments) - len(kept)
    if dropped:
        transcript.segments = kept
        transcript.decoding["non_speech_segments_dropped"] = dropped
        transcript.warnings.append(
            f"{dropped} decoded segment(s) dropped as non-speech: no word over the speech the voice activity "
            "detector found, or Whisper's own no-speech verdict (drop_non_speech: false keeps them)"
        )
    return transcript


def keeps(segment: Segment, speech: Speech) -> bool:
    if marked_no_speech(segment):
        return False
    if segment.words:
        return any(speech.overlaps(word.start, word.end) for word in segment.words)
    return speech.overlaps(segment.start, segment.end)


def marked_no_speech(segment: Segment) -> bool:
    """Whisper's rule: likely no speech, and decoded with little confidence."""
    if segment.no_speech_prob is None or segment.avg_logprob is None:
        return False
    return segment.no_speech_prob > NO_SPEECH_THRESHOLD and segment.avg_logprob < LOGPROB_THRESHOLD


def found_none(transcript: Transcript) -> bool:
    """Whether the VAD found no speech, so that nothing was decoded."""
    return transcript.decoding.get("mode") == NO_SPEECH_MODE


def _nothing(asr, config: InferenceConfig) -> Transcript:
    language = config.language if asr.is_multilingual else "en"
    return Transcript(
        segments=[],
        language=language,
        decoding={"mode": NO_SPEECH_MODE, "backend": asr.name, "model": asr.model_name},
        warnings=[NO_SPEECH_WARNING],
    )
