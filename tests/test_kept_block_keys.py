"""A kept block's key holds everything that decides its result (issue 74): a job whose blocks were kept by
one server's models and resumed on a server with others decodes every block again and says why; the same
server takes them. The key changes with any one of the block's samples."""

from __future__ import annotations

import copy

import numpy as np

from support.audio import decode_reference, encode
from support.paths import AUDIO
from whisper_endpoint.blocks import saved
from whisper_endpoint.core.decode_context import DecodeContext
from whisper_endpoint.core.types import SAMPLE_RATE
from whisper_endpoint.jobs.kept_blocks import KeptBlocks
from whisper_endpoint.jobs.sqlite_store import SqliteJobStore

OTHER_WORK = "kept blocks were decoded again: they were decoded by another model, backend, compute type or diarizer"


def _in_blocks(handler):
    blocked = copy.copy(handler)
    blocked.settings = handler.settings.model_copy(update={"block_seconds": 10})
    return blocked


class _Counted(KeptBlocks):
    """A job's kept blocks in its store, counting the blocks taken and those decoded (saved)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.taken, self.saved = [], []

    def load(self, index, key):
        body = super().load(index, key)
        if body is not None:
            self.taken.append(index)
        return body

    def save(self, index, key, body):
        self.saved.append(index)
        super().save(index, key, body)


def test_blocks_kept_by_other_models_are_decoded_again_and_said_so(tiny_handler, tiny_tf, tmp_path):
    store = SqliteJobStore(tmp_path / "jobs.db")
    store.add("job", "audio/flac", {}, str(tmp_path / "input"), None)
    assert store.claim_next("server", 60).id == "job"
    speech = decode_reference(AUDIO / "clips" / "asterisk_conf-adminmenu-162.flac")[: 5 * SAMPLE_RATE]
    audio = np.concatenate([speech, np.zeros(11 * SAMPLE_RATE, np.float32)])  # blocks: speech, then silence
    data = {"inputs": encode(audio, SAMPLE_RATE, "flac", "flac")}

    def run(handler):
        kept = _Counted(store, "job", "server")
        return handler.run(data, DecodeContext(checkpoints=kept)), kept

    ct2, tf = _in_blocks(tiny_handler), _in_blocks(tiny_tf)
    first, kept = run(ct2)
    blocks = first["decoding"]["blocks"]
    assert blocks >= 2 and kept.saved == list(range(blocks)) and first["decoding"]["backend"] == "ctranslate2"
    again, kept = run(ct2)  # the same server: every block taken
    assert (kept.taken, kept.saved) == (list(range(blocks)), []) and again == first
    other, kept = run(tf)  # another backend: nothing taken, every block decoded again, and said so
    assert (kept.taken, kept.saved) == ([], list(range(blocks)))
    assert f"{blocks} {OTHER_WORK}" in other["warnings"] and other["decoding"]["backend"] == "transformers"
    resumed, kept = run(tf)  # now kept by this server: taken
    assert (kept.taken, kept.saved) == (list(range(blocks)), [])
    assert other["warnings"] == [f"{blocks} {OTHER_WORK}", *resumed["warnings"]]  # the rest alike
    assert {**resumed, "warnings": other["warnings"]} == other
    store.close()


class _Asked:
    """Checkpoints that stop the decode at the first block asked for, after noting its key."""

    class Enough(Exception):
        pass

    def load(self, index, key):
        self.asked = (index, key)
        raise self.Enough

    def save(self, index, key, body):
        raise AssertionError("nothing is decoded")


def test_a_blocks_key_changes_with_any_one_of_its_samples(tiny_handler):
    samples = (np.random.default_rng(7).standard_normal(20 * SAMPLE_RATE) * 0.1).astype(np.float32)
    samples[round(9.8 * SAMPLE_RATE): round(10.2 * SAMPLE_RATE)] = 0  # the cut: blocks of 0-10 s and 10-20 s
    nudged = samples.copy()
    nudged[3 * SAMPLE_RATE] += 0.25  # one sample of the first block
    handler = _in_blocks(tiny_handler)

    def first_key(audio):
        asked = _Asked()
        try:
            handler.run({"inputs": encode(audio, SAMPLE_RATE, "flac", "flac")}, DecodeContext(checkpoints=asked))
        except _Asked.Enough:
            pass
        return asked.asked

    first = first_key(samples)
    assert first[0] == 0 and first_key(samples) == first  # the same samples: the same key
    assert first_key(nudged)[1] != first[1]
    smallest = samples[: 10 * SAMPLE_RATE].copy()
    smallest[-1] = np.nextafter(smallest[-1], np.float32(1))  # the least change a float32 sample can take
    assert saved.samples_digest(smallest) != saved.samples_digest(samples[: 10 * SAMPLE_RATE])


class _Pipeline:
    """A pyannote-like pipeline: hyperparameters and one of the embedded pipeline's refinements."""

    def __init__(self, threshold: float, turn_check: float):
        self.threshold, self.turn_check = threshold, turn_check

    def parameters(self, instantiated: bool = False):
        return {"clustering": {"threshold": self.threshold}}


class _Backend:
    name, model_name, device, compute_type = "ctranslate2", "embedded:tiny.en", "cpu", "int8"

    def __init__(self, model_path, **changed):
        self.model_path = model_path
        vars(self).update(changed)


def test_a_blocks_key_holds_the_model_files_the_backend_settings_and_the_diarizer(tmp_path):
    from whisper_endpoint.diarization.base import Diarizer

    (tmp_path / "model.bin").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    asr = _Backend(tmp_path)

    def key(asr, diarizer=None):
        return saved.key(0, 10, "samples", {"language": None}, saved.work(asr, diarizer))

    plain = key(asr)
    (tmp_path / "model.bin").write_bytes(b"weightz")
    assert key(asr) == plain  # a loaded backend's files are read once: what it loaded
    assert key(_Backend(tmp_path)) != plain  # other weights under the same name
    (tmp_path / "model.bin").write_bytes(b"weights")
    assert key(_Backend(tmp_path)) == plain
    for changed in ({"compute_type": "float32"}, {"model_name": "embedded:base"}, {"device": "cuda"},
                    {"name": "transformers"}):
        assert key(_Backend(tmp_path, **changed)) != plain
    diarized = key(asr, Diarizer(_Pipeline(0.6, 1.0), name="embedded", device="cpu"))
    assert diarized != plain and diarized.partition("-")[0] == plain.partition("-")[0]
    assert key(asr, Diarizer(_Pipeline(0.6, 1.0), name="embedded", device="cpu")) == diarized
    assert key(asr, Diarizer(_Pipeline(0.7, 1.0), name="embedded", device="cpu")) != diarized
    assert key(asr, Diarizer(_Pipeline(0.6, 2.0), name="embedded", device="cpu")) != diarized
    assert "another model" in saved.why_not_taken(plain, diarized)
    assert "other samples" in saved.why_not_taken(plain, saved.key(0, 10, "other", {"language": None},
                                                                   saved.work(asr, None)))
