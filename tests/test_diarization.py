"""Diarization through the handler: the embedded pipeline, the word-level merge, the request switches."""

import json
from collections import Counter

import pytest

from support.paths import AUDIO
from support.audio import read_clip

MEETING = AUDIO / "dialogues" / "flite_meeting.flac"


@pytest.fixture(scope="module")
def diarizing(diarizing_handler):
    return diarizing_handler


@pytest.fixture(scope="module")
def meeting(diarizing):
    return diarizing({"inputs": MEETING.read_bytes(),
                      "parameters": {"return_speaker_words": True, "return_speaker_turns": True}})


def _truth_speaker(turns, t):
    return min(turns, key=lambda turn: 0 if turn["start"] <= t <= turn["end"] else
               min(abs(t - turn["start"]), abs(t - turn["end"])))["speaker"]


def test_words_get_the_speaker_who_said_them(meeting):
    truth = json.loads(MEETING.with_suffix(".json").read_text())["turns"]
    words = [word for run in meeting["speakers"] for word in run["words"]]
    pairs = [(w["speaker"], _truth_speaker(truth, sum(w["timestamp"]) / 2)) for w in words]
    mapping = {}  # each found label -> the true speaker it most often covers
    for (found, true), _ in Counter(pairs).most_common():
        mapping.setdefault(found, true)
    accuracy = sum(mapping[found] == true for found, true in pairs) / len(pairs)
    assert len(words) > 60 and accuracy >= 0.9
    assert len({run["speaker"] for run in meeting["speakers"]}) == 3


def test_every_word_is_in_the_speakers_once_and_in_order(meeting):
    joined = " ".join(run["text"] for run in meeting["speakers"])
    assert joined.split() == meeting["text"].split()
    starts = [run["timestamp"][0] for run in meeting["speakers"]]
    assert starts == sorted(starts)
    assert all(run.keys() >= {"speaker", "text", "timestamp"} for run in meeting["speakers"])


def test_chunks_stay_as_asked_and_raw_turns_come_back(meeting):
    assert meeting["chunks"] and all(len(c["text"].split()) > 1 for c in meeting["chunks"])  # segments, not words
    turns = meeting["speaker_turns"]
    assert turns and all(t["start"] < t["end"] <= meeting["duration"] for t in turns)
    assert {t["speaker"] for t in turns} >= {run["speaker"] for run in meeting["speakers"]}


@pytest.mark.slow  # several diarized requests
def test_num_speakers_is_passed_through(diarizing):
    result = diarizing({"inputs": MEETING.read_bytes(), "parameters": {"num_speakers": 2, "return_timestamps": "none"}})
    assert len({run["speaker"] for run in result["speakers"]}) == 2 and result["chunks"] == []


def test_diarization_can_be_skipped_per_request(diarizing):
    result = diarizing({"inputs": read_clip("asterisk_vm-next.flac"), "parameters": {"diarize": False}})
    assert result["speakers"] == [] and result["text"]


def test_silence_gives_no_speakers_and_no_error(diarizing):
    import numpy as np

    from whisper_endpoint.speakers.merge import NO_TURNS_SPEAKER

    result = diarizing({"inputs": {"array": np.zeros(16000 * 25, dtype=np.float32), "sampling_rate": 16000},
                        "parameters": {"drop_non_speech": False, "return_speaker_turns": True}})
    # No turns: whatever Whisper made of 25 s of silence (kept on request; tiny.en hears "you") still comes
    # back, under the one label that stands for no turns.
    assert result["speaker_turns"] == [] and result["text"].strip()
    assert " ".join(run["text"] for run in result["speakers"]).split() == result["text"].split()
    assert [run["speaker"] for run in result["speakers"]] == [NO_TURNS_SPEAKER]


def test_segments_without_word_times_are_labelled_whole_and_said(diarizing):
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.core.config import InferenceConfig
    from whisper_endpoint.speakers import step as speaker_step

    samples = decode_file(read_clip("asterisk_vm-next.flac"), max_seconds=60).samples
    config = InferenceConfig(return_timestamps="segment")
    transcript = diarizing.asr.transcribe(samples, config)  # segment times only: no words came with them
    speakers = speaker_step.label_speakers(diarizing.diarizer, samples, transcript, config, len(samples) / 16000)
    assert " ".join(run["text"] for run in speakers.runs).split() == transcript.text.split()
    assert "1 of 1 segments came without word times" in " ".join(speakers.warnings)


@pytest.mark.slow  # each channel diarized
def test_diarize_channels_labels_each_channel_s_own_speakers(diarizing):
    """Multichannel with diarize_channels: the first 10 s of the meeting (two voices) on the left, a
    clip (one voice) on the right; speakers and turns carry the channel's name."""
    import numpy as np

    from support.paths import CLIPS
    from support.audio import decode_reference

    left = decode_reference(MEETING)[: 10 * 16000]
    clip = decode_reference(CLIPS / "asterisk_vm-next.flac")
    right = np.zeros_like(left)
    right[6 * 16000 : 6 * 16000 + len(clip)] = clip
    result = diarizing({"inputs": {"array": np.stack([left, right]).tolist()},
                        "parameters": {"multichannel": True, "diarize_channels": True, "channel_names": "room,phone",
                                       "return_speaker_turns": True}})
    labels = [(run["channel"], run["speaker"]) for run in result["speakers"]]
    assert {label for channel, label in labels if channel == 0} == {"room:SPEAKER_00", "room:SPEAKER_01"}
    assert {label for channel, label in labels if channel == 1} == {"phone:SPEAKER_00"}
    assert {turn["speaker"].split(":")[0] for turn in result["speaker_turns"]} == {"room", "phone"}
    assert "words" not in result["speakers"][0]  # asked for by the channel flow, not by the request
