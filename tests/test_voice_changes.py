"""Cutting turns where the voice changes (whisper_endpoint/diarization/voice_changes.py), on the short-gap
alike-voice files: a tuning dialogue whose two voices (rms and a copy 3 semitones up) change within
0.1-0.4 s or overlap, a one-voice negative with the same gaps that must stay one speaker, and a judging
dialogue (not tuned on) whose second woman the windows split between two labels."""

import json

import numpy as np
import pytest
import torch
from pyannote.core import Annotation, Segment

from support.paths import ROOT
from support.audio import decode_reference
from whisper_endpoint.diarization.embedded import pooled
from whisper_endpoint.diarization.embedded.refinements import voice_changes

ALIKE = ROOT / "audio" / "alike_voices"
CLOSE = ALIKE / "tuning" / "t8_rms_copy_close.flac"  # one speaker without the cut (results/voice_changes.json)
ONE_VOICE = ALIKE / "negatives" / "n4_slt_close.flac"  # slt at varied rates and pitches, 0.1-0.4 s gaps
TWO_WOMEN_AND_A_MAN = ALIKE / "judging" / "j7_alpha_nezumi_kumo_close.flac"  # jf_alpha, jf_nezumi, jm_kumo


def turns(path):
    return json.loads(path.with_suffix(".json").read_text())["turns"]


def speakers(diarization) -> set[str]:
    """Who speaks in the exclusive turns (what the evaluation counts: the overlap-aware turns can hold a
    speaker of a few overlapped frames that the clustering kept)."""
    return {turn.speaker for turn in diarization.exclusive}


@pytest.fixture(scope="module")
def diarizer():
    from whisper_endpoint.diarization import EMBEDDED, load_diarizer

    torch.set_num_threads(1)
    return load_diarizer(EMBEDDED)


def test_a_turn_holding_two_voices_is_cut_near_each_change(diarizer):
    samples = decode_reference(CLOSE)
    truth = turns(CLOSE)[:3]  # rms, its copy from 0.01 s before rms ends, rms again 0.12 s after the copy
    changes = [(a["end"] + b["start"]) / 2 for a, b in zip(truth, truth[1:])]
    trunk = pooled.Trunk(diarizer.pipeline.embedding_network)
    store = pooled.frames_of(trunk, torch.from_numpy(samples), diarizer.pipeline.tiling)
    joined = Annotation()
    joined[Segment(truth[0]["start"], truth[-1]["end"])] = "SPEAKER_00"  # what the segmentation returned
    pieces = list(voice_changes.split_turns(joined, store, trunk, samples).itersegments())
    cuts = [piece.end for piece in pieces[:-1]]
    assert len(cuts) == len(changes)
    assert np.abs(np.array(cuts) - changes).max() < 0.35
    same_voice = Annotation()
    same_voice[Segment(truth[0]["start"], truth[0]["end"])] = "SPEAKER_00"
    assert len(voice_changes.split_turns(same_voice, store, trunk, samples)) == 1


def test_two_alike_voices_changing_closely_are_two_speakers(diarizer, monkeypatch):
    samples = decode_reference(CLOSE)
    assert len({turn["speaker"] for turn in turns(CLOSE)}) == 2
    assert len(speakers(diarizer.diarize(samples))) == 2
    monkeypatch.setattr(diarizer.pipeline, "voice_changes", None)
    assert len(speakers(diarizer.diarize(samples))) == 1  # the count check alone keeps them together


def test_one_voice_with_short_gaps_stays_one_speaker(diarizer):
    assert len({turn["speaker"] for turn in turns(ONE_VOICE)}) == 1
    found = diarizer.diarize(decode_reference(ONE_VOICE))
    assert speakers(found) == {"SPEAKER_00"} and found.speakers == ["SPEAKER_00"]


def test_a_voice_cut_out_of_a_mixed_speaker_joins_the_speaker_that_already_has_it(diarizer):
    # The windows give jf_alpha and jf_nezumi's first turns one label and her later turns (after the man)
    # another; the cut and the count check take her out of the first, and she must join the second
    # (compared on turns embedded alone: pooled, the man next to her later turns sets them apart), not
    # become a fourth speaker.
    truth = turns(TWO_WOMEN_AND_A_MAN)
    found = diarizer.diarize(decode_reference(TWO_WOMEN_AND_A_MAN))
    assert len({turn["speaker"] for turn in truth}) == len(speakers(found)) == 3
    labels = {}
    for turn in truth:  # who the diarizer says speaks in the middle of each true turn
        middle = (turn["start"] + turn["end"]) / 2
        said = [t.speaker for t in found.exclusive if t.start <= middle < t.end]
        labels.setdefault(turn["speaker"], set()).update(said)
    assert all(len(found_labels) == 1 for found_labels in labels.values()), labels
    assert len(set.union(*labels.values())) == 3


def test_options_come_from_the_pipeline_config():
    from whisper_endpoint.diarization.offline import OfflineSpeakerDiarization

    assert OfflineSpeakerDiarization(voice_changes={"similarity": 0.6}).voice_changes.similarity == 0.6
