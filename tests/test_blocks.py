"""Long recordings in blocks (whisper_endpoint/blocks/, issue 62): where the cuts fall, how the blocks'
voices become speakers, the samples kept on disk, the progress of the whole, and a decode that resumes
after its last kept block with the result an uninterrupted one gives."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from support.audio import encode
from support.paths import AUDIO
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.audio.spool import SpooledSamples
from whisper_endpoint.blocks import linking, plan
from whisper_endpoint.core.decode_context import Block, DecodeContext
from whisper_endpoint.core.types import SAMPLE_RATE, Segment, Word


def _noise(seconds: float, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(round(seconds * SAMPLE_RATE)) * 0.1).astype(np.float32)


def test_audio_up_to_a_block_and_a_half_is_decoded_whole():
    assert plan.blocks(_noise(30), 20) == [(0, 30 * SAMPLE_RATE)]
    assert plan.blocks(_noise(31), 0) == [(0, 31 * SAMPLE_RATE)]  # BLOCK_SECONDS=0: never in blocks
    assert len(plan.blocks(_noise(31), 20)) == 2


def test_a_cut_moves_to_the_quiet_near_it():
    samples = _noise(100)
    quiet = slice(round(47.2 * SAMPLE_RATE), round(47.6 * SAMPLE_RATE))  # 7 s after the even cut at 40 s
    samples[quiet] = 0
    spans = plan.blocks(samples, 20)
    assert len(spans) == 5
    assert all(abs(stop - k * 20 * SAMPLE_RATE) <= plan.SEARCH_S * SAMPLE_RATE  # each cut near its even place
               for k, (_, stop) in enumerate(spans[:-1], start=1))
    cut = spans[1][1]
    assert quiet.start <= cut < quiet.stop
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous: no sample lost or read twice


def _voice(block: int, label: str, direction: np.ndarray, seed: int, seconds: float = 60.0) -> linking.Voice:
    noise = np.random.default_rng(seed).standard_normal(direction.shape) * 0.25
    return linking.Voice(block, label, direction + noise, seconds, first=block * 600.0)


def test_the_blocks_voices_become_the_recordings_speakers():
    rng = np.random.default_rng(1)
    ann, bob, cy = (rng.standard_normal(192) for _ in range(3))
    voices = [_voice(0, "SPEAKER_00", ann, 1), _voice(0, "SPEAKER_01", bob, 2), _voice(1, "SPEAKER_00", bob, 3),
              _voice(1, "SPEAKER_01", ann, 4), _voice(2, "SPEAKER_00", cy, 5), _voice(2, "SPEAKER_01", ann, 6)]
    groups = linking.group(voices)
    as_sets = [{(v.block, v.label) for v in members} for members in groups]
    assert as_sets == [{(0, "SPEAKER_00"), (1, "SPEAKER_01"), (2, "SPEAKER_01")},
                       {(0, "SPEAKER_01"), (1, "SPEAKER_00")}, {(2, "SPEAKER_00")}]
    assert len(linking.group(voices, max_speakers=2)) == 2
    assert len(linking.group(voices, num_speakers=4)) == 4  # the count asked for, whatever the similarity
    assert len(linking.group(voices, min_speakers=5)) == 5


def test_two_voices_of_one_block_are_never_one_speaker():
    """Two alike voices the block's diarizer told apart stay apart, however alike their centroids; the same
    pair in two blocks is one speaker."""
    rng = np.random.default_rng(2)
    ann = rng.standard_normal(192)
    twin = ann + rng.standard_normal(192) * 0.2  # more alike than SAME_VOICE
    voices = [_voice(0, "SPEAKER_00", ann, 1), _voice(0, "SPEAKER_01", twin, 2)]
    assert len(linking.group(voices)) == 2
    assert len(linking.group([_voice(0, "SPEAKER_00", ann, 1), _voice(1, "SPEAKER_00", twin, 2)])) == 1
    assert len(linking.group(voices, num_speakers=1)) == 2  # the count asked for cannot join them either


def test_a_blocks_uncertain_count_is_not_the_recordings():
    """A block's note that its count was close speaks of the block's count, not of the linked one: dropped
    when there are several blocks, kept when the recording was one (issue 75)."""
    from whisper_endpoint.blocks.runner import _linked
    from whisper_endpoint.blocks.saved import BlockResult
    from whisper_endpoint.core.config import InferenceConfig
    from whisper_endpoint.core.types import SpeakerTurn, Transcript
    from whisper_endpoint.diarization.base import COUNT_UNCERTAIN, Diarization

    vector = np.random.default_rng(3).standard_normal(192)
    note = f"{COUNT_UNCERTAIN}: 1 speaker found, 2 nearly (...)"

    def block(index: int) -> BlockResult:
        turn = SpeakerTurn(10.0 * index, 10.0 * index + 5, "SPEAKER_00")
        found = Diarization([turn], [turn], [note, "another note"])
        return BlockResult(index * 160000, (index + 1) * 160000, 1, Transcript(segments=[], language="en"), found,
                           {"SPEAKER_00": (vector, 5.0)})

    assert _linked([block(0), block(1)], InferenceConfig()).warnings == ["another note"]
    assert _linked([block(0)], InferenceConfig()).warnings == [note, "another note"]


def test_long_files_are_decoded_to_disk_with_the_same_samples(tmp_path):
    body = encode(_noise(12 * 22050 / SAMPLE_RATE, seed=3), 22050, "flac", "flac")  # 12 s, resampled too
    whole = decode_file(body, max_seconds=60)
    spooled = decode_file(body, max_seconds=60, spool_over_s=10)
    assert isinstance(spooled.samples, SpooledSamples) and isinstance(whole.samples, np.ndarray)
    assert spooled.duration == whole.duration and spooled.samples.shape == whole.samples.shape
    np.testing.assert_array_equal(spooled.samples[:], whole.samples)
    np.testing.assert_array_equal(spooled.samples[1000:5000], whole.samples[1000:5000])
    assert isinstance(decode_file(body, max_seconds=60, spool_over_s=20).samples, np.ndarray)  # short: in memory


def test_a_blocks_reports_are_placed_in_the_whole_recording():
    seen = []
    context = DecodeContext(listeners=(seen.append,))
    before = (Segment(0.0, 2.0, " one"),)
    block = context.in_block(Block(1, 3, 600.0, windows_before=20, windows_after=20, segments_before=before))
    block.report(2, 5, [Segment(1.0, 2.0, " two", words=(Word(1.0, 2.0, " two"),))])
    last = seen[-1]
    assert (last.windows_done, last.windows_total, last.blocks_done, last.blocks_total) == (22, 45, 1, 3)
    assert [(s.start, s.text) for s in last.segments] == [(0.0, " one"), (601.0, " two")]
    assert last.segments[1].words[0].start == 601.0
    assert last.public() == {"stage": "decoding", "windows_done": 22, "windows_total": 45, "blocks_done": 1,
                             "blocks_total": 3}


class _Kept:
    """Checkpoints in a dict, counting the blocks decoded (saved) and taken."""

    def __init__(self, bodies: dict | None = None):
        self.bodies = dict(bodies or {})
        self.saved, self.taken = [], []

    def load(self, index, key):
        body = self.bodies.get((index, key))
        if body is not None:
            self.taken.append(index)
        return body

    def save(self, index, key, body):
        self.saved.append(index)
        self.bodies[(index, key)] = body


class _Asked(_Kept):
    """The first block asked for, and the decode stopped there (what it would take is all a test needs)."""

    class Enough(Exception):
        pass

    def load(self, index, key):
        self.asked = (index, key)
        raise self.Enough


@pytest.mark.slow  # the diarization's models
def test_a_decode_resumes_after_its_last_kept_block_with_the_same_result(diarizing_handler):
    handler = copy.copy(diarizing_handler)
    handler.settings = diarizing_handler.settings.model_copy(update={"block_seconds": 10})
    data = {"inputs": (AUDIO / "dialogues" / "flite_meeting.flac").read_bytes(),
            "parameters": {"diarize": True, "return_speaker_turns": True}}
    kept, reports = _Kept(), []
    whole = handler.run(data, DecodeContext(checkpoints=kept, listeners=(reports.append,)))
    assert kept.saved == [0, 1, 2, 3] and whole["decoding"]["blocks"] == 4
    counts = [body["transcript"]["decoding"].get("encoder_windows", 0) for body in kept.bodies.values()]
    assert whole["decoding"]["encoder_windows"] == sum(counts) > counts[0]  # summed, not the first block's
    assert [p.blocks_done for p in reports][-1] == 4
    assert all(a.windows_done <= b.windows_done for a, b in zip(reports, reports[1:]))
    first_two = {key: body for key, body in kept.bodies.items() if key[0] < 2}
    resumed_kept = _Kept(first_two)
    resumed = handler.run(data, DecodeContext(checkpoints=resumed_kept))
    assert (resumed_kept.taken, resumed_kept.saved) == ([0, 1], [2, 3])
    assert resumed == whole
    changed = {**data, "parameters": {**data["parameters"], "language": "en"}}  # another request: no block taken
    other = _Asked(kept.bodies)
    with pytest.raises(_Asked.Enough):
        handler.run(changed, DecodeContext(checkpoints=other))
    assert other.asked[0] == 0 and other.asked not in kept.bodies


def test_audio_spooled_at_the_edge_of_one_block_is_decoded_whole(tiny_handler):
    """A file whose first pass counts a hair over 1.5 blocks is spooled, yet the plan keeps it one block."""
    handler = copy.copy(tiny_handler)
    handler.settings = tiny_handler.settings.model_copy(update={"block_seconds": 10})
    body = encode(np.zeros(15 * SAMPLE_RATE + 1, np.float32), SAMPLE_RATE, "flac", "flac")
    assert isinstance(decode_file(body, max_seconds=60, spool_over_s=15).samples, SpooledSamples)
    assert handler({"inputs": body})["text"] == ""


_SAMPLED = """
from support.audio import decode_reference
from support.paths import AUDIO
from whisper_endpoint.asr import load_asr_backend
from whisper_endpoint.core.config import InferenceConfig, ModelSettings
asr = load_asr_backend(ModelSettings(asr_model="embedded:tiny.en", cpu_threads=1))
czech = decode_reference(AUDIO / "mixed" / "mixed_cs_en_fdto.flac")[: 16000 * 8]
print("".join(segment.text for segment in asr.transcribe(czech, InferenceConfig(temperature=1.0)).segments))
"""


def test_two_fresh_processes_sample_alike():
    # A job's blocks may come from several replicas: the temperature fallback's samples must not depend on
    # which process drew them (CTranslate2 seeds each thread's generator at random unless told).
    import os
    import subprocess
    import sys

    from support.paths import ROOT

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    runs = [subprocess.Popen([sys.executable, "-c", _SAMPLED], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE) for _ in range(2)]
    said = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err[-2000:] for _, err in said]
    assert said[0][0].strip() and said[0][0] == said[1][0]
