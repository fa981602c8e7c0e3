"""Diarization backends: the embedded pipeline, local pipeline files, Hub failures. Real weights, offline."""

import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from support.paths import ROOT, AUDIO
from support.audio import decode_reference
from whisper_endpoint.core.errors import InvalidParameterError, ModelLoadError
from whisper_endpoint.core.types import SpeakerTurn
from whisper_endpoint.diarization import Diarization, load_diarizer

TOKEN = "hf_NotARealTokenButSecretAll1234567890"
LABEL = re.compile(r"SPEAKER_\d\d")


def pyannote_sample():
    import pyannote.audio

    return os.path.join(os.path.dirname(pyannote.audio.__file__), "sample")


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """These tests share 2 cores with whatever else runs: torch's OpenMP threads then wait on each other
    (measured here: pyannote's 30 s sample took 69 s with 2 threads under load, 3 s with one)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def embedded():
    return load_diarizer("embedded", device="cpu")


@pytest.fixture(scope="module")
def sample(embedded):  # loading the diarizer imported pyannote quietly; reading the sample needs it
    from whisper_endpoint.audio.decode import decode_file

    with open(os.path.join(pyannote_sample(), "sample.wav"), "rb") as file:
        return decode_file(file.read(), max_seconds=60).samples


def der(diarization: Diarization, rttm: str, duration: float, offset: float = 0.0) -> float:
    """DER (collar 0.25 s) of the exclusive turns of audio that starts ``offset`` s into the RTTM's."""
    from pyannote.core import Annotation, Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference, hypothesis = Annotation(), Annotation()
    for line in open(rttm).read().splitlines():
        fields = line.split()
        start = float(fields[3]) - offset
        reference[Segment(start, start + float(fields[4]))] = fields[7]
    for turn in diarization.exclusive:
        hypothesis[Segment(turn.start, turn.end)] = turn.speaker
    return DiarizationErrorRate(collar=0.25)(reference, hypothesis, uem=Timeline([Segment(0, duration)]))


def assert_well_formed(diarization: Diarization):
    for turns in (diarization.turns, diarization.exclusive):
        assert turns == sorted(turns, key=lambda turn: (turn.start, turn.end, turn.speaker))
        assert all(isinstance(t, SpeakerTurn) for t in turns)
        assert all(0 <= t.start < t.end and LABEL.fullmatch(t.speaker) for t in turns)
    exclusive = diarization.exclusive
    # one speaker at a time
    assert all(a.end <= b.start + 1e-6 for a, b in zip(exclusive, exclusive[1:], strict=False))


@pytest.mark.slow  # the embedded pipeline loaded on its own
def test_embedded_finds_both_speakers_of_the_pyannote_sample(embedded, sample):
    result = embedded.diarize(sample)
    assert_well_formed(result)
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
    # 6.55% measured (scripts/evaluate_diarization.py); the bound leaves room for numeric differences
    # across CPUs and library versions (merging the two speakers would cost ~40%).
    assert der(result, os.path.join(pyannote_sample(), "sample.rttm"), len(sample) / 16000) < 0.10
    assert embedded.name == "embedded" and embedded.device == "cpu"


def test_speaker_count_passes_through(embedded, sample):
    assert embedded.diarize(sample[: 16000 * 15], num_speakers=1).speakers == ["SPEAKER_00"]


def test_contradictory_speaker_counts_are_refused_before_any_work(embedded):
    with pytest.raises(InvalidParameterError, match="min_speakers"):
        embedded.diarize(np.zeros(16000, np.float32), min_speakers=3, max_speakers=2)


@pytest.mark.parametrize("samples", [
    np.zeros(0, np.float32),  # nothing at all
    np.zeros(100, np.float32),  # a few samples
    np.zeros(16000 * 12, np.float32),  # digital silence longer than one 10 s window
], ids=["empty", "100 samples", "12 s silence"])
def test_silence_and_tiny_inputs_have_no_turns(embedded, samples):
    assert embedded.diarize(samples) == Diarization([], [])


def test_noise_is_nobody_and_short_speech_does_not_crash(embedded, sample):
    noise = np.random.default_rng(0).normal(0, 0.003, 16000 * 3).astype(np.float32)  # -50 dBFS
    assert embedded.diarize(noise).turns == []
    short = embedded.diarize(sample[16000 * 4 : 16000 * 5])  # one second, shorter than a window
    assert_well_formed(short)
    assert len(short.speakers) <= 1


def test_a_diarization_runs_on_its_own_thread_count_and_gives_the_callers_back(embedded, sample):
    """torch's default threads spin on a shared CPU (core/threads.py): the diarizer runs at its own count,
    seen inside the pipeline's segmentation, and the calling thread's count is restored afterwards."""
    import torch

    pipeline, seen = embedded.pipeline, []
    segmentations = pipeline.get_segmentations

    def counted(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return segmentations(*args, **kwargs)

    caller = embedded.threads + 1
    torch.set_num_threads(caller)
    pipeline.get_segmentations = counted
    try:
        assert embedded.diarize(sample[: 16000 * 12]).turns
    finally:
        del pipeline.get_segmentations
        after = torch.get_num_threads()
        torch.set_num_threads(1)
    assert seen == [embedded.threads]
    assert after == caller


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (4, 1), (8, 2), (16, 4), (64, 4)])
def test_the_default_diarization_threads_by_cores(cores, threads):
    from whisper_endpoint.core.threads import default_threads, diarization_threads

    assert default_threads(cores) == threads
    assert diarization_threads(3) == 3  # DIARIZATION_THREADS wins


@pytest.mark.slow  # the pipeline run on the sample
def test_the_turn_check_gives_a_mislabelled_turn_back_to_its_speaker(embedded, sample):
    """The real CAM++ embedding of a turn, against the real centroids: a turn handed to the other
    speaker is found and moved back (turn_check.py; here on the pyannote sample's longest turn)."""
    import torch
    from pyannote.core import Timeline

    from whisper_endpoint.diarization.embedded import pooled
    from whisper_endpoint.diarization.embedded.refinements import turn_check

    pipeline = embedded.pipeline
    output = pipeline({"waveform": torch.from_numpy(sample)[None], "sample_rate": 16000, "uri": "sample"})
    labels = output.speaker_diarization.labels()
    turn, track, label = max(output.exclusive_speaker_diarization.itertracks(yield_label=True),
                             key=lambda item: item[0].duration)
    other = next(name for name in labels if name != label)
    wrong = output.exclusive_speaker_diarization.copy()
    wrong[turn, track] = other
    embed = pipeline.frames(sample).embedder(pooled.Trunk(pipeline.embedding_network))
    assert turn_check.moves(output.exclusive_speaker_diarization, labels, output.speaker_embeddings, embed) == []
    found = turn_check.moves(wrong, labels, output.speaker_embeddings, embed)
    assert found == [turn_check.Move(turn, other, label)]
    fixed = turn_check.apply(wrong, found)
    assert fixed.label_timeline(label).covers(Timeline([turn]))
    assert not fixed.label_timeline(other).crop(turn)  # nothing of the turn is left with the other speaker


def test_speech_fill_reads_long_inputs_in_blocks_and_joins_regions_cut_at_their_edges(monkeypatch):
    """Silero runs a block at a time (its memory stays flat); a speech region across a block edge
    comes back whole, and only edges near the cut may move (Silero's state starts afresh there)."""
    from whisper_endpoint.diarization.embedded.refinements import speech_fill

    samples = decode_reference(AUDIO / "dialogues" / "flite_meeting.flac")
    options = speech_fill.SpeechFillOptions()
    whole = speech_fill.speech_regions(samples, options)
    monkeypatch.setattr(speech_fill, "BLOCK_SAMPLES", 512 * 500)  # 16 s blocks: two edges in 36 s
    blocked = speech_fill.speech_regions(samples, options)
    assert all(any(region.start < edge < region.end for region in whole) for edge in (16.0, 32.0))  # speech there
    assert not any(abs(region.end - edge) < 1e-6 or abs(region.start - edge) < 1e-6
                   for region in blocked for edge in (16.0, 32.0))  # no region ends at a block edge
    assert abs(blocked.duration() - whole.duration()) < 0.5 and len(blocked) == len(whole)


@pytest.fixture(scope="module")
def checkpoints(embedded):
    from whisper_endpoint.diarization.checkpoints import campplus_checkpoint, segmentation_checkpoint

    return segmentation_checkpoint(), campplus_checkpoint()


def offline_pipeline_yaml(checkpoints, *, threshold: float, extra: str = "") -> str:
    """An OfflineSpeakerDiarization pipeline file with local checkpoints and window step 0.5."""
    segmentation, embedding = checkpoints
    return f"""\
pipeline:
  name: whisper_endpoint.diarization.offline.OfflineSpeakerDiarization
  params:
    segmentation: {segmentation}
    embedding: {embedding}
    segmentation_step: 0.5
{extra}params:
  clustering:
    threshold: {threshold}
"""


@pytest.mark.slow  # a pipeline loaded from disk
def test_a_local_config_yaml_with_local_checkpoints_loads(tmp_path, checkpoints, sample):
    """The air-gapped path: a pipeline file whose checkpoints are paths on disk, loaded as a directory
    and as the file itself."""
    (tmp_path / "config.yaml").write_text(
        # the sample is a narrowband recording: the studio's threshold as given, which step 0.5 was chosen at
        offline_pipeline_yaml(checkpoints, threshold=0.6, extra="    speech_fill: false\n    narrowband_shift: 0\n")
    )
    diarizer = load_diarizer(str(tmp_path), device="cpu")
    assert diarizer.pipeline.segmentation_step == 0.5 and diarizer.pipeline.speech_fill is None
    assert diarizer.pipeline.clustering.narrowband_shift == 0
    assert diarizer.diarize(sample[16000 * 6 : 16000 * 22]).speakers == ["SPEAKER_00", "SPEAKER_01"]
    assert load_diarizer(str(tmp_path / "config.yaml"), device="cpu").pipeline.segmentation_step == 0.5


def test_a_stock_pyannote_pipeline_class_loads_from_a_local_file(tmp_path, checkpoints, sample):
    """pyannote's own classes work the same way (here its voice activity detection, which labels speech
    rather than speakers: its turns come back as they are, and exclusive falls back to them)."""
    (tmp_path / "vad.yaml").write_text(f"""\
pipeline:
  name: pyannote.audio.pipelines.VoiceActivityDetection
  params:
    segmentation: {checkpoints[0]}
    step: 2.5
params:
  min_duration_on: 0.0
  min_duration_off: 0.0
""")
    result = load_diarizer(str(tmp_path / "vad.yaml"), device="cpu").diarize(sample[16000 * 6 : 16000 * 22])
    assert result.speakers == ["SPEECH"] and result.exclusive == result.turns
    assert 10 < sum(turn.end - turn.start for turn in result.turns) < 16  # 13.7 s in sample.rttm


def _hub_snapshot(cache_dir, repo_id: str, files: dict[str, str]) -> None:
    """Lay files out as huggingface_hub's cache holds a downloaded repository (what a deployer's
    earlier download, or an image build with HF_HUB_OFFLINE unset, leaves behind)."""
    repo = cache_dir / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    for name, text in files.items():
        (repo / "snapshots" / commit / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "snapshots" / commit / name).write_text(text)


@pytest.mark.slow  # two pipelines loaded and run
def test_hub_id_and_local_directory_build_the_same_pipeline(tmp_path, checkpoints, sample, offline_hub):
    config = offline_pipeline_yaml(checkpoints, threshold=0.55)
    local = tmp_path / "local"
    local.mkdir()
    (local / "config.yaml").write_text(config)
    _hub_snapshot(tmp_path / "hub", "our-org/speaker-diarization-offline", {"config.yaml": config})

    from_dir = load_diarizer(str(local), device="cpu")
    from_hub = load_diarizer("our-org/speaker-diarization-offline", token=TOKEN, device="cpu",
                             cache_dir=tmp_path / "hub")
    assert type(from_hub.pipeline) is type(from_dir.pipeline)
    assert from_hub.pipeline.parameters(instantiated=True) == from_dir.pipeline.parameters(instantiated=True)
    assert from_hub.pipeline.parameters(instantiated=True)["clustering"]["threshold"] == 0.55
    assert from_hub.pipeline.segmentation_step == from_dir.pipeline.segmentation_step == 0.5
    excerpt = sample[16000 * 6 : 16000 * 22]
    assert from_hub.diarize(excerpt) == from_dir.diarize(excerpt)


@pytest.mark.parametrize("option", ["pooled_embeddings: false", "pooled_turns: false", "segmentaton_step: 0.2"])
def test_a_config_yaml_naming_an_option_the_pipeline_does_not_take_is_refused_naming_it(tmp_path, checkpoints,
                                                                                         option):
    """Options earlier versions took (CHANGELOG.md lists them) and typos: a clear load-time error naming
    the option, not a TypeError."""
    (tmp_path / "config.yaml").write_text(offline_pipeline_yaml(checkpoints, threshold=0.6, extra=f"    {option}\n"))
    name = option.split(":")[0]
    with pytest.raises(ModelLoadError, match=f"takes no {name}: remove it from the pipeline's config.yaml"):
        load_diarizer(str(tmp_path), device="cpu")


@pytest.mark.parametrize("reference, message", [
    ("/nonexistent/pipeline", "does not exist"),
    ("not-a-hub-id", "does not exist"),
])
def test_missing_local_pipelines_are_named(reference, message):
    with pytest.raises(ModelLoadError, match=message):
        load_diarizer(reference, device="cpu")


def test_a_directory_without_config_yaml_is_named(tmp_path):
    with pytest.raises(ModelLoadError, match="has no config.yaml"):
        load_diarizer(str(tmp_path), device="cpu")


def test_a_broken_pipeline_file_is_a_model_load_error(tmp_path):
    (tmp_path / "config.yaml").write_text("pipeline:\n  name: no.such.Pipeline\n")
    with pytest.raises(ModelLoadError, match="could not be loaded"):
        load_diarizer(str(tmp_path), device="cpu")


@pytest.fixture
def offline_hub(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def assert_no_token(caught, caplog, capsys):
    captured = capsys.readouterr()
    for text in (str(caught.value), caplog.text, captured.out, captured.err, repr(caught.value.__cause__)):
        assert TOKEN not in text


def test_an_unreachable_hub_pipeline_fails_clearly_without_leaking_the_token(offline_hub, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ModelLoadError) as caught:
        load_diarizer("pyannote/speaker-diarization-community-1", token=TOKEN, device="cpu")
    message = str(caught.value)
    assert "pyannote/speaker-diarization-community-1" in message
    assert "HF_HUB_OFFLINE" in message and "DIARIZATION_MODEL=embedded" in message
    assert_no_token(caught, caplog, capsys)


def test_a_local_pipeline_naming_an_unreachable_hub_checkpoint_fails_clearly(
    tmp_path, offline_hub, caplog, capsys
):
    """What pyannote/speaker-diarization-3.1's config.yaml does until its checkpoints are made local."""
    (tmp_path / "config.yaml").write_text(
        "pipeline:\n  name: pyannote.audio.pipelines.VoiceActivityDetection\n"
        "  params:\n    segmentation: pyannote/segmentation-3.0\n"
    )
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ModelLoadError, match="or a checkpoint it names.*HF_HUB_OFFLINE") as caught:
        load_diarizer(str(tmp_path), token=TOKEN, device="cpu")
    assert_no_token(caught, caplog, capsys)


def test_pyannote_telemetry_is_off_unless_the_deployer_turns_it_on(embedded):
    from pyannote.audio.telemetry.metrics import is_metrics_enabled

    if os.environ.get("PYANNOTE_METRICS_ENABLED") == "0":
        assert not is_metrics_enabled()
    script = "import os, whisper_endpoint.diarization; print(os.environ['PYANNOTE_METRICS_ENABLED'])"
    env = {k: v for k, v in os.environ.items() if k != "PYANNOTE_METRICS_ENABLED"}
    for given, expected in ((None, "0"), ("1", "1")):
        if given is not None:
            env["PYANNOTE_METRICS_ENABLED"] = given
        run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True)
        assert run.stdout.decode().strip() == expected, run.stderr


def test_legacy_annotation_output_falls_back_to_its_turns():
    from pyannote.core import Annotation, Segment

    from whisper_endpoint.diarization.base import from_pyannote

    annotation = Annotation()
    annotation[Segment(2.0, 3.0)] = "SPEAKER_01"
    annotation[Segment(0.5, 2.5)] = "SPEAKER_00"
    result = from_pyannote(annotation)
    expected = [SpeakerTurn(0.5, 2.5, "SPEAKER_00"), SpeakerTurn(2.0, 3.0, "SPEAKER_01")]
    assert result.turns == result.exclusive == expected
