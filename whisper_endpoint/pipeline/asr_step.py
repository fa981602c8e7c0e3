"""The request's ASR step: the backend's transcription, without words over silence, noise or music
(``drop_non_speech``, on by default).

Whisper decodes something from any audio: "you" from 30 s of digital silence, a repeated syllable
from pink noise. Around the backend's transcription, on both backends and both decoding paths:

1. the VAD (asr/speech.py) finds no speech: nothing is decoded; the response has no text, a
   "no speech found" warning and ``decoding.mode: "no speech"`` (and diarization does not run);
2. words that do not lie over the VAD's speech are dropped (without word times: segments no part of
   which does): text made up over the silence before or after speech, also when the backend put it in
   one segment with real speech (the transformers backend groups words into sentences);
3. a segment Whisper itself marks as no speech is dropped: its no-speech probability over
   ``no_speech_threshold`` (0.6) with an average token log-probability under -1, Whisper's
   rule, which faster-whisper's sequential decoder applies to each window and its batched pipeline
   (all long audio) does not.

``drop_non_speech: false`` keeps everything the backend decoded, as before.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from whisper_endpoint.asr.decoding_options import keep
from whisper_endpoint.asr.speech import Speech, find_speech
from whisper_endpoint.asr.speech import heard_once as speech_heard_once
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.types import Segment, Transcript

NO_SPEECH_MODE = "no speech"
DEFAULT_THRESHOLD = InferenceConfig.model_fields["no_speech_threshold"].default
NO_SPEECH_WARNING = "no speech found: the voice activity detector heard none, so nothing was transcribed " \
                    "(drop_non_speech: false decodes it anyway)"


def transcribe_speech(asr, samples, config: InferenceConfig, context=None) -> Transcript:
    """``asr.transcribe(samples, config, context)`` without what it decoded over non-speech; the VAD hears
    the samples once for all the steps that ask about them (asr/speech.py)."""
    with speech_heard_once():
        return _transcribe_speech(asr, samples, config, context)


def _transcribe_speech(asr, samples, config: InferenceConfig, context=None) -> Transcript:
    if not config.drop_non_speech:
        return asr.transcribe(samples, config, context)
    speech = find_speech(samples)
    if not speech:
        return _nothing(asr, config)
    threshold = config.no_speech_threshold
    if context is None:
        return keep_speech(asr.transcribe(samples, config), speech, threshold)
    filtered = context.narrowed(keep=partial(_over_speech_only, speech=speech, threshold=threshold))  # progress alike
    return keep_speech(asr.transcribe(samples, config, filtered), speech, threshold)


def keep_speech(transcript: Transcript, speech: Speech, threshold: float = DEFAULT_THRESHOLD) -> Transcript:
    """``transcript`` without what lies outside ``speech`` (or that Whisper's rule at ``threshold`` marks
    as no speech), with a warning when anything went."""
    kept = list(_over_speech_only(tuple(transcript.segments), speech, threshold))
    if kept == transcript.segments:
        return transcript
    dropped = sum(len(s.text.split()) for s in transcript.segments) - sum(len(s.text.split()) for s in kept)
    warning = (f"{dropped} decoded word(s) dropped as non-speech: outside the speech the voice activity detector "
               "found, or in a segment Whisper itself marks as no speech (drop_non_speech: false keeps them)")
    return replace(transcript, segments=kept, decoding={**transcript.decoding, "non_speech_words_dropped": dropped},
                   warnings=[*transcript.warnings, warning])


def _over_speech_only(segments: tuple, speech: Speech, threshold: float = DEFAULT_THRESHOLD) -> tuple:
    return tuple(s for s in (over_speech(segment, speech, threshold) for segment in segments) if s is not None)


def over_speech(segment: Segment, speech: Speech, threshold: float = DEFAULT_THRESHOLD) -> Segment | None:
    """The part of ``segment`` over ``speech``: its words that overlap it (the whole segment when it has
    no word times and overlaps it); None when nothing is left or Whisper marks it as no speech."""
    if not keep(segment, threshold):  # Whisper's no-speech rule (no_speech_threshold)
        return None
    if not segment.words:
        return segment if speech.overlaps(segment.start, segment.end) else None
    words = tuple(word for word in segment.words if speech.overlaps(word.start, word.end))
    if len(words) == len(segment.words):
        return segment
    if not words:
        return None
    return replace(segment, start=words[0].start, end=words[-1].end, text="".join(w.text for w in words),
                   words=words)


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
