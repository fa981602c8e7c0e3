"""One diarizer interface over any pyannote.audio pipeline: samples in, speaker turns out.

``Diarizer`` hands pyannote the waveform in memory (``{"waveform": (1, n) tensor, "sample_rate":
16000}``), so pyannote never decodes a file and torchcodec's FFmpeg libraries are not needed.

Requests may call one ``Diarizer`` from several threads at once: pyannote's ``apply`` keeps its
intermediate results in local variables, and what the response says about a request (e.g. fewer
speakers found than ``min_speakers``) is read from that request's own output. pyannote itself reports
such cases with ``warnings.warn`` and ``print``, which only process-wide redirection of ``sys.stdout``
and the warnings filters could catch, and those mix up requests that overlap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from whisper_endpoint.core.errors import InvalidParameterError
from whisper_endpoint.core.types import SAMPLE_RATE, SpeakerTurn

logger = logging.getLogger(__name__)

# Shorter audio holds no speaker turn worth reporting (pyannote's frames are ~17 ms, its
# embeddings need far more); it returns no turns instead of asking the models.
MIN_SAMPLES = SAMPLE_RATE // 4
_SILENCE_PEAK = 1e-4  # -80 dBFS: digital silence and dither
# How the embedded pipeline's note on an uncertain speaker count starts (embedded/refinements/count_check.py): a
# recording diarized in blocks drops the blocks' notes, whose counts are not the linked count.
COUNT_UNCERTAIN = "the speaker count is uncertain"
# The embedded pipeline's settings beside pyannote's hyperparameters (embedded/pipeline.py), in a description.
_REFINEMENTS = ("segmentation_step", "speech_fill", "turn_check", "count_check", "voice_changes", "window_check",
                "tiling", "embedding_exclude_overlap")


@dataclass
class Diarization:
    """Who spoke when. Turns are sorted by start time; labels are ``SPEAKER_00``, ``SPEAKER_01``...

    Attributes:
      turns: every speaker turn; turns of different speakers may overlap.
      exclusive: at most one speaker at any time (pyannote's exclusive diarization, meant for
        aligning with transcripts); the same as ``turns`` when the pipeline does not provide it.
      warnings: what the pipeline reported, e.g. fewer speakers found than min_speakers.
      embeddings: each speaker's centroid as the pipeline computed it (empty when it gives none).
    """

    turns: list[SpeakerTurn]
    exclusive: list[SpeakerTurn]
    warnings: list[str] = field(default_factory=list)
    embeddings: dict[str, np.ndarray] = field(default_factory=dict, compare=False)  # arrays: no ==

    @property
    def speakers(self) -> list[str]:
        return sorted({turn.speaker for turn in self.turns})


@dataclass(frozen=True)
class SpeakerCount:
    """num_speakers wins over min/max, as in pyannote."""

    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None

    def checked(self) -> SpeakerCount:
        for name in ("num_speakers", "min_speakers", "max_speakers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidParameterError(f"{name} must be a positive integer (got {value!r})")
        if self.num_speakers is not None:
            return SpeakerCount(num_speakers=self.num_speakers)
        low, high = self.min_speakers, self.max_speakers
        if low is not None and high is not None and low > high:
            raise InvalidParameterError(
                f"min_speakers must be smaller than or equal to max_speakers (here: {low} > {high})"
            )
        return self

    def as_kwargs(self) -> dict:
        return {name: value for name, value in vars(self).items() if value is not None}


class Diarizer:
    """A loaded pyannote pipeline; ``diarize`` may be called for any number of requests."""

    def __init__(self, pipeline, *, name: str, device: str, threads: int = 1):
        self.pipeline = pipeline
        self.name = name  # what DIARIZATION_MODEL said, for the response's "decoding" block
        self.device = device
        self.threads = threads  # torch's intra-op threads while this diarizer runs (core/threads.py)

    def diarize(
        self,
        samples: np.ndarray,
        *,
        num_speakers: int | None = None,
        min_speakers: int | None = None,
        max_speakers: int | None = None,
        stop: Callable[[], None] | None = None,
    ) -> Diarization:
        """Diarize 16 kHz mono float32 samples. ``stop`` is called between the pipeline's steps and
        batches: an exception raised from it stops the diarization there."""
        count = SpeakerCount(num_speakers, min_speakers, max_speakers).checked()
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if len(samples) < MIN_SAMPLES or not np.any(np.abs(samples) > _SILENCE_PEAK):
            diarization = Diarization([], [])
        else:
            diarization = from_pyannote(self._run(samples, count, stop))
        diarization.warnings += count_notes(len(diarization.speakers), count)
        for note in diarization.warnings:
            logger.info("diarization: %s", note)
        return diarization

    def embed_voice(self, samples: np.ndarray) -> np.ndarray:
        """One embedding of a clip of one voice, with the model the pipeline embeds speakers with."""
        from whisper_endpoint.core.threads import torch_threads

        with torch_threads(self.threads):
            return embed_voice(self.pipeline, samples)

    def description(self) -> dict:
        """What decides this diarizer's turns besides the samples, the same from one server to the next (a
        kept block's key, whisper_endpoint/blocks/saved.py): its name, device, pipeline class, the pipeline's
        hyperparameters and the embedded pipeline's refinements."""
        pipeline = self.pipeline
        kind = f"{type(pipeline).__module__}.{type(pipeline).__qualname__}"
        described = {"name": self.name, "device": str(self.device), "pipeline": kind}
        try:  # pyannote's Pipeline: the instantiated hyperparameters (clustering threshold...)
            described["parameters"] = pipeline.parameters(instantiated=True)
        except Exception:  # not a pyannote Pipeline, or not instantiated
            pass
        for name in _REFINEMENTS:
            if hasattr(pipeline, name):
                described[name] = repr(getattr(pipeline, name))  # floats and option dataclasses
        network = getattr(pipeline, "embedding_network", None)
        if network is not None:  # CAM++ on ONNX Runtime or on torch
            described["onnx"] = getattr(network, "onnx_trunk", None) is not None
        return described

    @property
    def embedding_model(self) -> str:

        return embedding_model_name(self.pipeline)

    def _run(self, samples: np.ndarray, count: SpeakerCount, stop: Callable[[], None] | None):
        import torch

        from whisper_endpoint.core.threads import torch_threads

        audio = {"waveform": torch.from_numpy(samples)[None], "sample_rate": SAMPLE_RATE, "uri": "input"}
        options = count.as_kwargs()
        if stop is not None:  # pyannote calls its hook after each step and each batch of windows
            options["hook"] = lambda *_, **__: stop()
        with torch_threads(self.threads):
            return self.pipeline(audio, **options)


def count_notes(found: int, count: SpeakerCount) -> list[str]:
    """Say when the speakers found miss the count asked for (too little speech from some of them, or
    voices too alike to tell apart); the response carries what was found."""
    speakers = f"{found} speaker{'' if found == 1 else 's'}"
    if count.num_speakers is not None and found != count.num_speakers:
        return [f"diarization found {speakers}, not the {count.num_speakers} asked for (num_speakers)"]
    if count.min_speakers is not None and found < count.min_speakers:
        return [f"diarization found {speakers}, fewer than min_speakers={count.min_speakers}"]
    if count.max_speakers is not None and found > count.max_speakers:
        return [f"diarization found {speakers}, more than max_speakers={count.max_speakers}"]
    return []


def from_pyannote(output, *, warnings: list[str] | None = None) -> Diarization:
    """A pyannote ``DiarizeOutput`` (pyannote.audio 4) or ``Annotation`` (older pipelines)."""
    regular = getattr(output, "speaker_diarization", output)
    exclusive = getattr(output, "exclusive_speaker_diarization", None)
    turns = _turns(regular)
    notes = list(getattr(output, "notes", []))  # the embedded pipeline's, e.g. an uncertain count
    return Diarization(
        turns, _turns(exclusive) if exclusive is not None else list(turns), [*(warnings or []), *notes],
        _centroids(output),
    )


def _centroids(output) -> dict[str, np.ndarray]:
    """``speaker_embeddings`` rows follow ``speaker_diarization.labels()`` (pyannote.audio 4)."""
    centroids = getattr(output, "speaker_embeddings", None)
    if centroids is None:
        return {}
    labels = output.speaker_diarization.labels()
    return {str(label): np.asarray(row, dtype=np.float64) for label, row in zip(labels, centroids)}


def _turns(annotation) -> list[SpeakerTurn]:
    turns = [
        SpeakerTurn(round(segment.start, 3), round(segment.end, 3), str(label))
        for segment, _, label in annotation.itertracks(yield_label=True)
        if segment.end > segment.start
    ]
    return sorted(turns, key=lambda turn: (turn.start, turn.end, turn.speaker))


# --- a voice's embedding with the diarizer's own model, for naming known speakers ---------------------
# Enrolment clips must land in the space the pipeline's speaker centroids live in, so they go through
# the model the pipeline embeds with: CAM++ for the embedded pipeline (its ``embedding_network``), the
# pipeline's pretrained embedding (pyannote's ``_embedding`` wrapper: WeSpeaker for community-1 and 3.1)
# for any other pyannote pipeline, as speaches' diarization route does. The whole clip is one
# embedding: the caller gives speech of one voice only.
def embed_voice(pipeline, samples: np.ndarray) -> np.ndarray:
    """One embedding (1-D float64) of 16 kHz mono ``samples``, on the pipeline's device."""
    import torch

    waveform = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))[None, None]
    network = getattr(pipeline, "embedding_network", None)
    if network is not None:  # the embedded pipeline: CAM++ directly
        device = next(network.parameters()).device
        with torch.inference_mode():
            return network(waveform.to(device))[0].cpu().numpy().astype(np.float64)
    return np.asarray(pipeline._embedding(waveform), dtype=np.float64)[0]


def embedding_model_name(pipeline) -> str:
    """What a client needs to know to compare vectors: which model made them."""
    if getattr(pipeline, "embedding_network", None) is not None:
        return "CAM++ (3D-Speaker campplus_cn_en_common, 192-dim)"
    embedding = getattr(pipeline, "embedding", None)
    if isinstance(embedding, str):
        return embedding
    if isinstance(embedding, dict):  # {"checkpoint": ..., "subfolder": ...}
        return "/".join(str(embedding[key]) for key in ("checkpoint", "subfolder") if embedding.get(key))
    return type(getattr(pipeline, "_embedding", embedding)).__name__
