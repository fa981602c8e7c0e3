"""CAM++ run once over the whole input, its frame features pooled under each speaker mask.

pyannote embeds every (10 s window, local speaker) pair, so with a 1 s step every second of speech went
through CAM++ about ten times. CAM++ ends in statistics pooling (mean and standard deviation over time)
and one dense layer, so here everything before the pooling (the "trunk") runs once over the input, in
tiles, and each pair's embedding is the dense layer applied to the mean and standard deviation of the
trunk frames its mask keeps: how pyannote's own WeSpeaker embedding treats a window's speakers, the
trunk seeing the other speakers around a turn as it does there.

Tiles: ``tile_s`` seconds of output with ``context_s`` more on each side, so frames near an edge see
about the context of the middle; tiles no mask uses are not computed; sums are accumulated chunk by
chunk. What grows with the input is the float16 copy of the frames kept for the refinements
(``FrameStore``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from whisper_endpoint.core.types import SAMPLE_RATE

HOP = 160  # filterbank frame shift (10 ms)
WINDOW = 400  # filterbank frame length (25 ms)
STRIDE = 2  # CAM++'s first TDNN layer halves the frame rate: one trunk frame per two filterbank frames
FRAME_RATE = SAMPLE_RATE // (HOP * STRIDE)  # trunk frames per second
_EPS_STD = 1e-2  # CAM++'s StatsPool: the standard deviation of a single frame


@dataclass(frozen=True)
class Tiling:
    tile_s: float = 20.0
    context_s: float = 2.0

    def frames(self) -> tuple[int, int]:
        """(output, context) in filterbank frames, both even so trunk frames stay on one grid."""
        return STRIDE * round(self.tile_s * FRAME_RATE), STRIDE * round(self.context_s * FRAME_RATE)


def fbank_frames(num_samples: int) -> int:
    """Kaldi filterbank frames of ``num_samples`` (snip_edges: whole frames only)."""
    return 0 if num_samples < WINDOW else 1 + (num_samples - WINDOW) // HOP


def trunk_frames(num_samples: int) -> int:
    return -(-fbank_frames(num_samples) // STRIDE)


class Trunk:
    """CAM++ up to its statistics pooling, and the dense layer after it."""

    def __init__(self, network):
        self.network = network  # CamPlusPlusEmbedding
        campplus = network.campplus
        self.head = campplus.head
        self.body = campplus.xvector[:-2]  # everything but "stats" and "dense"
        self.dense = campplus.xvector.dense

    @property
    def device(self) -> torch.device:
        return next(self.network.parameters()).device

    def features(self, samples: torch.Tensor) -> torch.Tensor:
        """(num_samples,) -> (num_trunk_frames, channels): one frame per 20 ms, from sample 0."""
        fbank = self.network.fbank(samples)
        fbank = (fbank - fbank.mean(dim=0, keepdim=True)).T[None].contiguous()
        onnx_trunk = getattr(self.network, "onnx_trunk", None)
        if onnx_trunk is not None and self.device.type == "cpu":
            return onnx_trunk(fbank)[0].T  # the same frames to float32 rounding (diarization/campplus/onnx_trunk.py)
        frames = self.body(self.head(fbank))  # (1, channels, frames)
        return frames[0].T

    def embed(self, count: np.ndarray, total: np.ndarray, squares: np.ndarray) -> np.ndarray:
        """Embeddings from pooled sums: count (n,), total and squares (n, channels); NaN where count is 0."""
        safe = np.maximum(count, 1.0)[:, None]
        mean = total / safe
        variance = (squares - safe * mean**2) / np.maximum(safe - 1.0, 1.0)
        std = np.where(safe > 1.0, np.sqrt(np.maximum(variance, 0.0)), _EPS_STD)
        stats = torch.from_numpy(np.concatenate([mean, std], axis=1).astype(np.float32)).to(self.device)
        with torch.inference_mode():
            embeddings = self.dense(stats).cpu().numpy()
        embeddings[count == 0] = np.nan
        return embeddings


def tiles(
    samples: torch.Tensor, trunk: Trunk, tiling: Tiling, needed: np.ndarray
) -> Iterator[tuple[int, torch.Tensor]]:
    """(first trunk frame, features) for every tile that holds a needed trunk frame, in time order."""
    total = fbank_frames(len(samples))
    output, context = tiling.frames()
    for first in range(0, total, output):
        last = min(first + output, total)
        if not needed[first // STRIDE: -(-last // STRIDE)].any():
            continue
        start, stop = max(0, first - context), min(total, last + context)
        piece = samples[start * HOP: (stop - 1) * HOP + WINDOW]
        with torch.inference_mode():
            features = trunk.features(piece.to(trunk.device)).cpu()
        skip = (first - start) // STRIDE
        yield first // STRIDE, features[skip: skip + -(-(last - first) // STRIDE)]


class ChunkMasks:
    """Each (chunk, local speaker) mask of pyannote's binarized segmentation, on the trunk's frame grid.

    Chunk ``c`` starts ``c * step`` seconds in; its ``num_frames`` mask frames are stretched onto its
    trunk frames as the per-window embedding stretched them onto its filterbank frames (nearest).
    """

    def __init__(self, masks: np.ndarray, step_s: float, window_samples: int):
        self.masks = np.nan_to_num(masks, nan=0.0).astype(np.float32)  # (chunks, frames, speakers)
        window_fbank = fbank_frames(window_samples)
        self.length = -(-window_fbank // STRIDE)
        self.offsets = np.round(np.arange(len(masks)) * step_s * SAMPLE_RATE / HOP / STRIDE).astype(int)
        self.index = (STRIDE * np.arange(self.length) * masks.shape[1]) // window_fbank

    def weights(self, chunk: int) -> np.ndarray:
        """(speakers, trunk frames of the chunk)."""
        return self.masks[chunk][self.index].T

    def needed(self, num_trunk_frames: int) -> np.ndarray:
        """Trunk frames some mask keeps."""
        needed = np.zeros(num_trunk_frames + self.length, dtype=bool)
        for chunk, offset in enumerate(self.offsets):
            needed[offset: offset + self.length] |= self.masks[chunk][self.index].any(axis=1)
        return needed[:num_trunk_frames]


class FrameStore:
    """The trunk's frames of one input, kept (float16) to embed any stretch of it later: the turn check's
    turns, known only after clustering. 50 frames a second of 512 values: 51 KB per second."""

    def __init__(self, num_frames: int):
        self.frames: np.ndarray | None = None
        self.have = np.zeros(num_frames, dtype=bool)

    def put(self, first: int, features: np.ndarray) -> None:
        if self.frames is None:
            self.frames = np.zeros((len(self.have), features.shape[1]), dtype=np.float16)
        self.frames[first: first + len(features)] = features
        self.have[first: first + len(features)] = True

    def embedder(self, trunk: Trunk):
        """span -> embedding of the frames inside it (NaN when none was computed)."""
        spans = self.spans_embedder(trunk)
        return lambda span: spans(np.array([[span.start, span.end]]))[0]

    def spans_embedder(self, trunk: Trunk):
        """(n, 2) spans in seconds -> (n, dimension) embeddings of the frames inside each (NaN: none)."""

        def embed(spans: np.ndarray) -> np.ndarray:
            channels = self.frames.shape[1] if self.frames is not None else 1
            count, total, squares = np.zeros(len(spans)), np.zeros((len(spans), channels)), np.zeros((len(spans), channels))
            for row, (start, end) in enumerate(spans):
                first, last = round(start * FRAME_RATE), round(end * FRAME_RATE)
                kept = np.flatnonzero(self.have[first:last]) + first
                if len(kept):
                    features = self.frames[kept].astype(np.float64)
                    count[row], total[row], squares[row] = len(kept), features.sum(axis=0), (features**2).sum(axis=0)
            return trunk.embed(count, total, squares)

        return embed


def frames_of(trunk: Trunk, samples: torch.Tensor, tiling: Tiling) -> FrameStore:
    """Every trunk frame of ``samples``."""
    store = FrameStore(trunk_frames(len(samples)))
    for first, features in tiles(samples, trunk, tiling, np.ones(len(store.have), dtype=bool)):
        store.put(first, features.numpy())
    return store


def chunk_embeddings(trunk: Trunk, samples: torch.Tensor, masks: ChunkMasks, tiling: Tiling,
                     store: FrameStore | None = None) -> np.ndarray:
    """(chunks, speakers, dimension) embeddings; NaN for a speaker no frame of the chunk has.
    With ``store``, every trunk frame computed is kept there too."""
    from whisper_endpoint.diarization.campplus import EMBEDDING_DIMENSION

    num_chunks, _, num_speakers = masks.masks.shape
    embeddings = np.full((num_chunks, num_speakers, EMBEDDING_DIMENSION), np.nan, dtype=np.float32)
    total_trunk = trunk_frames(len(samples))
    open_: dict[int, _Sums] = {}  # chunks some tile reached and not all of whose tiles are done
    next_chunk = 0
    for first, features in tiles(samples, trunk, tiling, masks.needed(total_trunk)):
        if store is not None:
            store.put(first, features.numpy())
        features = features.double()
        last = first + len(features)
        while next_chunk < num_chunks and masks.offsets[next_chunk] < last:
            open_[next_chunk] = _Sums(num_speakers, features.shape[1])
            next_chunk += 1
        squares = features**2
        finished = []
        for chunk, sums in open_.items():
            offset = masks.offsets[chunk]
            low, high = max(first, offset), min(last, offset + masks.length)
            if low < high:
                sums.add(masks.weights(chunk)[:, low - offset: high - offset],
                         features[low - first: high - first], squares[low - first: high - first])
            if offset + masks.length <= last:
                finished.append(chunk)
        _embed(trunk, {chunk: open_.pop(chunk) for chunk in finished}, embeddings)
    _embed(trunk, open_, embeddings)
    return embeddings


class _Sums:
    """Weighted frame count, sum and sum of squares of trunk features, per local speaker.

    The products run in torch, on the diarizer's threads (core/threads.py): numpy's OpenBLAS splits these
    small products over every core, and its spinning threads cost many times the work itself."""

    def __init__(self, num_speakers: int, channels: int):
        self.count = np.zeros(num_speakers)
        self.total = np.zeros((num_speakers, channels))
        self.squares = np.zeros((num_speakers, channels))

    def add(self, weights: np.ndarray, features: torch.Tensor, squares: torch.Tensor) -> None:
        """``weights`` (speakers, frames); ``features`` and ``squares`` (frames, channels), float64."""
        weights = torch.from_numpy(weights.astype(np.float64))
        self.count += weights.sum(dim=1).numpy()
        self.total += (weights @ features).numpy()
        self.squares += (weights @ squares).numpy()


def _embed(trunk: Trunk, sums: dict[int, _Sums], embeddings: np.ndarray) -> None:
    if not sums:
        return
    chunks = list(sums)
    pooled = trunk.embed(np.concatenate([sums[c].count for c in chunks]),
                         np.concatenate([sums[c].total for c in chunks]),
                         np.concatenate([sums[c].squares for c in chunks]))
    embeddings[chunks] = pooled.reshape(len(chunks), embeddings.shape[1], -1)
