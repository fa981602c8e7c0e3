"""A recording decoded block by block (see the package's docstring): each block kept, or taken from a
checkpoint; then one transcript and one set of speakers for the whole recording."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from whisper_endpoint.blocks import linking, saved
from whisper_endpoint.blocks.saved import BlockResult
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.decode_context import Block, DecodeContext
from whisper_endpoint.core.types import SAMPLE_RATE, SpeakerTurn, Transcript, clock
from whisper_endpoint.diarization.base import COUNT_UNCERTAIN, Diarization
from whisper_endpoint.pipeline import asr_step, languages
from whisper_endpoint.pipeline.transcribe import AsrWithSpeakers, Transcribed
from whisper_endpoint.speakers.step import Heard

WINDOW_S = 30.0  # the ASR's window: the first block's guess of the windows to come
# What the backends count in ``Transcript.decoding``: the recording's count is the blocks' sum.
COUNTERS = ("non_speech_words_dropped", "remainders_decoded_again", "windows_decoded_again", "windows_not_recovered",
            "encoder_windows", "confidence_windows")


def transcribe(steps: AsrWithSpeakers, samples, config: InferenceConfig, context: DecodeContext,
               spans: list[tuple[int, int]]) -> Transcribed:
    """``samples`` (an array or ``SpooledSamples``) in the blocks ``spans``: the transcript, its speakers and
    the voices found."""
    parameters = config.model_dump(mode="json")
    checkpoints = context.checkpoints
    # What decodes the blocks, in each kept block's key (a request whose blocks no one keeps needs none).
    speakers = steps.speakers
    diarizer = speakers.step.diarizer if speakers.diarized else None
    work = saved.work(steps.asr, diarizer) if checkpoints is not None else {}
    results: list[BlockResult] = []
    not_taken: dict[str, int] = {}  # why kept blocks were decoded again -> how many
    windows, segments = 0, ()
    for index, (start, stop) in enumerate(spans):
        block = Block(index, len(spans), start / SAMPLE_RATE, windows, _windows_after(spans, index, windows),
                      segments)
        piece = np.ascontiguousarray(samples[start:stop], dtype=np.float32)
        body = key = None
        if checkpoints is not None:
            key = saved.key(start, stop, saved.samples_digest(piece), parameters, work)
            body = checkpoints.load(index, key)
            kept = _other_key(checkpoints, index, key) if body is None else None
            if kept is not None:  # kept under another key: by another server's models, say
                why = saved.why_not_taken(kept, key)
                not_taken[why] = not_taken.get(why, 0) + 1
        if body is None:
            body = saved.dumped(_decoded(steps, piece, (start, stop), config, context.in_block(block)))
            if checkpoints is not None:
                checkpoints.save(index, key, body)
        del piece  # one block's samples in memory at a time
        result = saved.loaded(body)  # the same values whether decoded now or taken from a checkpoint
        results.append(result)
        windows += result.windows
        segments += tuple(result.transcript.segments)
        done = Block(index + 1, len(spans), stop / SAMPLE_RATE, windows, _windows_after(spans, index + 1, windows),
                     segments)
        context.in_block(done).report(0, 0, ())  # one more block done; a stop asked for stops here
    transcript = _joined([result.transcript for result in results], spans)
    redone = [f"{count} kept block{'s were' if count > 1 else ' was'} decoded again: "
              f"{'they were' if count > 1 else 'it was'} {why}" for why, count in not_taken.items()]
    transcript = replace(transcript, warnings=[*redone, *transcript.warnings])
    diarized = speakers.diarized and any(result.diarization is not None for result in results)
    linked = _linked(results, config) if diarized else None  # None: not diarized, or no speech
    return steps.label(Heard(np.zeros(0, np.float32), transcript, linked, len(samples) / SAMPLE_RATE), config,
                       context)


def _other_key(checkpoints, index: int, key: str) -> str | None:
    """The key of the block kept at ``index`` when it is not ``key``, if the checkpoints can tell (a job's can:
    ``KeptBlocks.other_key``)."""
    other_key = getattr(checkpoints, "other_key", None)
    return other_key(index, key) if other_key is not None else None


def _decoded(steps: AsrWithSpeakers, piece: np.ndarray, span: tuple[int, int], config: InferenceConfig,
             context: DecodeContext) -> BlockResult:
    """One block (``piece``: its samples, ``span`` their place) through the ASR with its diarization
    alongside; times in the recording's."""
    heard = steps.heard(piece, _block_counts(config), context)
    transcript, found = heard.transcript, heard.diarization
    start, stop = span
    offset = start / SAMPLE_RATE
    voices = {}
    if found is not None:
        spoken = _seconds(found.exclusive)
        voices = {label: (np.asarray(vector, dtype=np.float64), spoken.get(label, 0.0))
                  for label, vector in steps.speakers.voices_of(found, piece).items()}
        found = Diarization(turns=_later(found.turns, offset), exclusive=_later(found.exclusive, offset),
                            warnings=found.warnings)
    block = context.block
    return BlockResult(
        start=start, stop=stop, windows=context.progress.windows_done - block.windows_before,
        transcript=replace(transcript, segments=[segment.later(offset) for segment in transcript.segments]),
        diarization=found, voices=voices,
    )


def _block_counts(config: InferenceConfig) -> InferenceConfig:
    """A block may hold fewer speakers than the recording: the counts asked for bound it from above only."""
    most = config.num_speakers or config.max_speakers
    return config.model_copy(update={"num_speakers": None, "min_speakers": None, "max_speakers": most})


def _windows_after(spans: list[tuple[int, int]], index: int, windows: int) -> int:
    """A guess of the windows the blocks from ``index`` on will decode: the rate so far, else one per 30 s."""
    left = sum(stop - start for start, stop in spans[index:]) / SAMPLE_RATE
    done = spans[index][0] / SAMPLE_RATE if index < len(spans) else 0.0
    rate = windows / done if windows and done else 1 / WINDOW_S
    return round(left * rate)


def _joined(transcripts: list[Transcript], spans: list[tuple[int, int]]) -> Transcript:
    """The blocks' transcripts as one: the main language is the one spoken longest, the counters summed, and
    each block's warnings say which block they are about."""
    spoken = [t for t in transcripts if not asr_step.found_none(t)] or transcripts
    segments = [segment for t in transcripts for segment in t.segments]
    shares = languages.summary(segments)  # largest share first
    main = shares[0]["language"] if shares else spoken[0].language
    first = next((t for t in spoken if t.language == main), spoken[0])
    counted = {name: sum(t.decoding.get(name, 0) for t in transcripts) for name in COUNTERS
               if any(name in t.decoding for t in transcripts)}
    decoded = {code for t in transcripts for code in t.decoding.get("languages_decoded", ())}
    if decoded:
        counted["languages_decoded"] = sorted(decoded)
    warnings = [f"{clock(start / SAMPLE_RATE)}-{clock(stop / SAMPLE_RATE)}: {warning}"
                for t, (start, stop) in zip(transcripts, spans, strict=True) for warning in t.warnings]
    return Transcript(segments=segments, language=main, language_probability=first.language_probability,
                      decoding={**first.decoding, **counted, "blocks": len(transcripts)}, warnings=warnings)


def _linked(results: list[BlockResult], config: InferenceConfig) -> Diarization:
    """The blocks' speakers as the recording's: grouped by voice (linking.py), labelled in speaking order."""
    voices = []
    for index, result in enumerate(results):
        if result.diarization is None:
            continue
        first = _first_turns(result.diarization.exclusive or result.diarization.turns)
        voices += [linking.Voice(index, label, vector, seconds, first.get(label, result.start / SAMPLE_RATE))
                   for label, (vector, seconds) in result.voices.items()]
    groups = linking.group(voices, num_speakers=config.num_speakers, min_speakers=config.min_speakers,
                           max_speakers=config.max_speakers)
    names = {(v.block, v.label): f"SPEAKER_{n:02d}" for n, members in enumerate(groups) for v in members}
    embeddings = {f"SPEAKER_{n:02d}": linking.centroid(members) for n, members in enumerate(groups)}
    for index, result in enumerate(results):  # a speaker too brief for a voice: one of its own
        for turn in result.diarization.turns if result.diarization is not None else ():
            names.setdefault((index, turn.speaker), f"SPEAKER_{len(set(names.values())):02d}")

    def named(kind: str) -> list[SpeakerTurn]:
        turns = [SpeakerTurn(t.start, t.end, names[(index, t.speaker)]) for index, result in enumerate(results)
                 if result.diarization is not None for t in getattr(result.diarization, kind)]
        return sorted(turns, key=lambda turn: (turn.start, turn.end))

    warnings = [w for result in results if result.diarization is not None for w in result.diarization.warnings
                if len(results) == 1 or not w.startswith(COUNT_UNCERTAIN)]  # a block's count is not the count
    count = len(set(names.values()))
    if config.num_speakers is not None and count != config.num_speakers:
        warnings.append(f"num_speakers={config.num_speakers} was asked for; the blocks' voices gave {count} speakers")
    return Diarization(turns=named("turns"), exclusive=named("exclusive"), warnings=list(dict.fromkeys(warnings)),
                       embeddings=embeddings)


def _seconds(turns: list[SpeakerTurn]) -> dict[str, float]:
    spoken: dict[str, float] = defaultdict(float)
    for turn in turns:
        spoken[turn.speaker] += turn.end - turn.start
    return spoken


def _first_turns(turns: list[SpeakerTurn]) -> dict[str, float]:
    first: dict[str, float] = {}
    for turn in turns:
        first[turn.speaker] = min(first.get(turn.speaker, turn.start), turn.start)
    return first


def _later(turns: list[SpeakerTurn], seconds: float) -> list[SpeakerTurn]:
    return [SpeakerTurn(t.start + seconds, t.end + seconds, t.speaker) for t in turns]
