"""How big each item runs: the full run (~50 min on 2 busy cores, without the items run only when named)
or --quick (the smoke test)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShareSizes:
    """``diarization_share``: the diarizer's CPU over the ASR at each length (one thread, after the ASR),
    then ``pairs`` defaults / one-thread pairs at ``threads_s`` (0: none)."""
    lengths_s: tuple[float, ...]
    threads_s: float
    pairs: int


@dataclass(frozen=True)
class AlongsideSizes:
    """``diarization_alongside``: rounds of alongside / after at each thread setting (0: the defaults)."""
    seconds: float
    pairs: int
    threads: tuple[int, ...] = (0, 1)


@dataclass(frozen=True)
class BatchSizes:
    """``batch``: the batch command over ``inputs`` (under the audio folder) in each mode."""
    model: str
    inputs: tuple[str, ...]
    modes: tuple[str, ...]  # single-1t, single-2t, ray
    ray_workers: int = 2
    ray_cpus: float = 1.0  # CPUs (and threads) per Ray worker


@dataclass(frozen=True)
class JobQueueSizes:
    """``job_queue``: store overhead over ``store_jobs`` jobs; ``jobs`` through each count of ``servers``."""
    store_jobs: int
    jobs: int
    servers: tuple[int, ...]  # () measures the store alone


@dataclass(frozen=True)
class ModelsSizes:
    """``models``: a server with ASR_MODELS=``models``; the second model unloaded ``swaps`` more times."""
    models: str
    swaps: int
    idle_unload_s: float


@dataclass(frozen=True)
class CostSizes:
    """``request_cost``: encoder windows per ``chunk_length_s`` over the first ``clips`` test clips joined
    (None: all 30), tiny.en; peak memory of one encoder call on each count of windows, ``batch_model``."""
    clips: int | None
    chunks: tuple[int, ...]
    batches: tuple[int, ...]
    batch_model: str  # an embedded model name (weights/embedded.py MODELS)


@dataclass(frozen=True)
class Plan:
    quick: bool
    model: str  # embedded model for every item
    short_clip: str  # in clips/: the short-request input
    long_source: str  # under the shared audio folder: cut or repeated to every long length
    long_language: str
    latency_clip: str  # in clips/: item 7's request
    repeats: int  # repeats of each short-input variant (the median is reported)
    warmup: bool  # one untimed call of each short-input variant first
    long_s: float | None  # item 1 ctranslate2 long input; None = the whole 13.4 min file
    transformers_long_s: float  # item 1 transformers long input (fp32 on CPU is ~10x slower)
    sequential_vs_batched_s: float  # item 2
    sweep_s: float  # item 4
    batch_sizes: tuple[int, ...]
    diarization_s: float | None  # item 5's headline length (one of diarization_lengths_s)
    diarization_lengths_s: tuple[float, ...]  # item 5: per-stage CPU time and peak memory
    diarization_threads_s: float  # item 5: a request of this length, plain and diarized, at the default threads and at one
    merge_words: tuple[int, ...]
    scaling_s: tuple[float, ...]  # item 6
    speculative_clips: int
    latency_requests: int  # item 7: one at a time
    load: tuple[tuple[int, int], ...]  # item 7: (concurrency, requests)
    concurrency_requests: int  # item 9: requests sent at once to each MAX_CONCURRENCY variant
    concurrency_repeats: int  # item 9: rounds over the variants (the median is reported)
    concurrency_variants: tuple[str, ...]  # item 9: servers (bench/items/concurrency.py SETTINGS)
    diarizer_share: ShareSizes  # item 5, only when named
    alongside: AlongsideSizes  # item 5, only when named
    batch: BatchSizes
    job_queue: JobQueueSizes
    models: ModelsSizes
    request_cost: CostSizes
    # Seconds of the long source kept as speech in every long input, the rest silence; None = all
    # speech. The smoke run only needs the long-audio paths to run, not to decode 30 s of talk.
    long_speech_s: float | None = None

    @property
    def language(self) -> str:
        return self.long_language


FULL = Plan(
    quick=False,
    model="embedded:base",
    short_clip="asterisk_vm-record-prepend.flac",  # 7.2 s, the clip closest to the 8 s
    long_source="long/fillets_long.flac",  # 13.4 min, Dutch, two speakers
    long_language="nl",
    latency_clip="asterisk_dictate_play_help.flac",  # 10.2 s: the low-latency "10 s chunk" case
    repeats=5,
    warmup=True,
    long_s=None,
    transformers_long_s=60.0,
    sequential_vs_batched_s=180.0,
    sweep_s=240.0,
    batch_sizes=(1, 4, 8, 16, 24),
    diarization_s=300.0,  # 5 min of the long file
    diarization_lengths_s=(60.0, 300.0, 804.0, 1608.0),  # 804 s: the whole file; 1608 s: two copies
    diarization_threads_s=804.0,
    merge_words=(2_000, 20_000, 200_000),
    scaling_s=(60.0, 300.0, 804.0, 1608.0),
    speculative_clips=5,
    latency_requests=8,
    load=((1, 8), (4, 16), (8, 32)),
    concurrency_requests=8,
    concurrency_repeats=3,
    concurrency_variants=("mc1_threads1", "mc1_threads2", "mc2_threads1", "mc2_threads2", "mc4_threads1"),
    diarizer_share=ShareSizes(lengths_s=(300.0, 804.0, 1608.0), threads_s=154.0, pairs=1),
    alongside=AlongsideSizes(seconds=300.0, pairs=1),
    batch=BatchSizes(model="embedded:tiny.en", inputs=("clips",), modes=("single-1t", "single-2t", "ray")),
    job_queue=JobQueueSizes(store_jobs=300, jobs=16, servers=(1, 2)),
    models=ModelsSizes(models="tiny=embedded:tiny.en,base=embedded:base,tinytf=embedded:tiny.en?backend=transformers,"
                              "basetf=embedded:base?backend=transformers", swaps=4, idle_unload_s=2.0),
    request_cost=CostSizes(clips=None, chunks=(1, 5, 15, 30), batches=(1, 8, 24), batch_model="base"),
)

def by_name(name: str) -> Plan:
    return QUICK if name == "quick" else FULL


QUICK = Plan(
    quick=True,
    model="embedded:tiny.en",
    short_clip="asterisk_all-circuits-busy-now.flac",  # 1.8 s
    long_source="dialogues/flite_meeting.flac",  # 36 s, English (tiny.en is English-only)
    long_language="en",
    latency_clip="asterisk_all-circuits-busy-now.flac",
    repeats=1,
    warmup=False,
    long_s=32.0,  # just over one 30 s window: the chunked/batched paths run
    transformers_long_s=32.0,
    sequential_vs_batched_s=32.0,
    sweep_s=32.0,
    batch_sizes=(1, 4),
    diarization_s=8.0,
    diarization_lengths_s=(8.0,),
    diarization_threads_s=8.0,
    merge_words=(200, 2_000),
    scaling_s=(5.0,),
    speculative_clips=1,
    latency_requests=1,
    load=((1, 1), (4, 4)),
    concurrency_requests=4,
    concurrency_repeats=1,
    concurrency_variants=("mc1_threads1", "mc2_threads1"),
    # Item 5's parts: one length, no thread pairs; alongside and after on one thread: runs item 5 makes
    # too (run after it, they reuse them: bench/items/diarization.py). One clip through the batch command
    # in one process (no Ray: its start-up alone is 10-20 s); the store alone (no servers:
    # each loads a model); a second tiny.en (float32) as the model to load and unload; chunk_length_s 1
    # on one clip, two batch sizes.
    diarizer_share=ShareSizes(lengths_s=(8.0,), threads_s=8.0, pairs=0),
    alongside=AlongsideSizes(seconds=8.0, pairs=1, threads=(1,)),
    batch=BatchSizes(model="embedded:tiny.en", inputs=("clips/asterisk_all-circuits-busy-now.flac",),
                     modes=("single-1t",)),
    job_queue=JobQueueSizes(store_jobs=5, jobs=2, servers=()),
    models=ModelsSizes(models="tiny=embedded:tiny.en,tiny32=embedded:tiny.en?compute_type=float32", swaps=1,
                       idle_unload_s=0.5),
    request_cost=CostSizes(clips=1, chunks=(1,), batches=(1, 2), batch_model="tiny.en"),
    long_speech_s=6.0,
)
