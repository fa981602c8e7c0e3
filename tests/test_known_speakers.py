"""Known speakers by name (issue 23): real voices enrolled from recordings other than the one transcribed.

The input is the first 30 s of fillets_barrel (big_fish and small_fish take turns); the enrolment clips
are turns of the same voice actors cut from the first minute of fillets_long, which shares no text with
barrel. tiny.en with the embedded diarizer (the session's ``diarizing_handler``): the words are English
guesses at Dutch speech, so the names are scored on the speaker turns. Two diarization runs in all: one
through the handler, one through the OpenAI route.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import av
import numpy as np
import openai
import pytest

from support.audio import encode
from support.serving import live_server
from whisper_endpoint import formats
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.core.config import InferenceConfig
from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.speakers import step as speaker_step
from whisper_endpoint.speakers.names import MATCH_THRESHOLD, match

AUDIO = Path(__file__).resolve().parents[1] / "audio"
BARREL = AUDIO / "dialogues" / "fillets_barrel.flac"
LONG = AUDIO / "long" / "fillets_long.flac"
RATE, EXCERPT_S, ENROL_FROM_S = 16000, 30.0, 64.0
# tiny.en hears the Dutch voices as noise: on the 30 s excerpt the sequential decoder retries its window
# at five temperatures, sampled (~19 s, other words each run). 15 s windows take the batched path, one
# greedy decode a window (~6 s). The names are judged on the diarizer's turns (_named_right).
FISH_ASR = {"language": "en", "chunk_length_s": 15}


def _flac(samples: np.ndarray) -> bytes:
    return encode(samples, RATE, "flac", "flac")


def _b64(samples: np.ndarray, data_url: bool = False) -> str:
    text = base64.b64encode(_flac(samples)).decode()
    return f"data:audio/flac;base64,{text}" if data_url else text


@pytest.fixture(scope="module")
def fish() -> dict[str, list[np.ndarray]]:
    """Two turns of 3-10 s per fish from fillets_long (not the transcribed file)."""
    samples = _head(LONG, ENROL_FROM_S)
    clips: dict[str, list[np.ndarray]] = {}
    for turn in json.loads(LONG.with_suffix(".json").read_text())["turns"]:
        chosen = clips.setdefault(turn["speaker"], [])
        if 3.0 <= turn["end"] - turn["start"] <= 10.0 and len(chosen) < 2:
            chosen.append(samples[round(turn["start"] * RATE): round(turn["end"] * RATE)])
    return clips


def _head(path: Path, seconds: float) -> np.ndarray:
    """The first ``seconds`` of a file, 16 kHz mono (the 13 min file need not be decoded whole)."""
    resampler, pieces = av.AudioResampler(format="flt", layout="mono", rate=RATE), []
    with av.open(str(path)) as container:
        for frame in container.decode(audio=0):
            pieces += [piece.to_ndarray().reshape(-1) for piece in resampler.resample(frame)]
            if sum(map(len, pieces)) >= seconds * RATE:
                break
    return np.concatenate(pieces)[: round(seconds * RATE)]


@pytest.fixture(scope="module")
def excerpt() -> tuple[bytes, list[dict]]:
    samples = decode_file(BARREL.read_bytes(), max_seconds=3600).samples[: round(EXCERPT_S * RATE)]
    turns = [t for t in json.loads(BARREL.with_suffix(".json").read_text())["turns"] if t["start"] < EXCERPT_S]
    return _flac(samples), turns


@pytest.fixture(scope="module")
def named_handler(diarizing_handler, settings_factory, fish, tmp_path_factory):
    """The session's tiny.en + embedded diarization handler, with SPEAKERS_DIR enrolling big_fish, read
    as the handler reads it at start-up (``load_voices``)."""
    folder = tmp_path_factory.mktemp("speakers")
    (folder / "big_fish").mkdir()
    for index, clip in enumerate(fish["big_fish"]):
        (folder / "big_fish" / f"clip{index}.flac").write_bytes(_flac(clip))
    handler = copy.copy(diarizing_handler)  # the same loaded models
    handler.speakers = copy.copy(handler.speakers)
    handler.speakers.voices = speaker_step.load_voices(settings_factory(speakers_dir=folder), handler.diarizer)
    return handler


def _named_right(named: list[dict], turns: list[dict]) -> dict[str, float]:
    """Per reference speaker: the share of its speech that the result's speaker turns give its name, out
    of its speech they cover. Judged on the diarizer's turns: where tiny.en puts its words on Dutch speech
    says nothing about the names (FISH_ASR)."""
    covered: dict[str, float] = {}
    right: dict[str, float] = {}
    for truth in turns:
        who = truth["speaker"]
        for turn in named:
            overlap = min(truth["end"], turn["end"]) - max(truth["start"], turn["start"])
            if overlap > 0:
                covered[who] = covered.get(who, 0.0) + overlap
                right[who] = right.get(who, 0.0) + overlap * (turn["speaker"] == who)
    return {name: right[name] / seconds for name, seconds in covered.items()}


def test_request_and_speakers_dir_names_reach_every_format_with_embeddings(named_handler, excerpt, fish):
    audio, turns = excerpt
    result = named_handler({"inputs": audio, "parameters": {
        **FISH_ASR, "return_speaker_words": True, "return_speaker_turns": True,
        "return_speaker_embeddings": True,
        "known_speakers": [{"name": "small_fish", "audio": [_b64(c) for c in fish["small_fish"]]}]}})
    right = _named_right(result["speaker_turns"], turns)
    assert right["big_fish"] >= 0.9 and right["small_fish"] >= 0.9  # SPEAKERS_DIR's name and the request's
    assert {m["name"] for m in result["speaker_matches"]} == {"big_fish", "small_fish"}
    assert all(m["similarity"] >= MATCH_THRESHOLD for m in result["speaker_matches"])
    assert {turn["speaker"] for turn in result["speaker_turns"]} == {"big_fish", "small_fish"}
    embeddings = result["speaker_embeddings"]
    assert "CAM++" in embeddings["model"] and set(embeddings["speakers"]) == {"big_fish", "small_fish"}
    assert all(len(vector) == 192 for vector in embeddings["speakers"].values())
    shown = {name: formats.render(result, name).body for name in ("srt", "vtt", "txt", "tsv", "rttm")}
    for name in ("big_fish", "small_fish"):
        assert f"[{name}]" in shown["srt"] and f"<v {name}>" in shown["vtt"] and f"{name}: " in shown["txt"]
        assert f"\t{name}\t" in shown["tsv"] and f" {name} <NA>" in shown["rttm"]
    segments = formats.render(result, "diarized_json").body["segments"]
    assert {segment["speaker"] for segment in segments} == {"big_fish", "small_fish"}


def test_a_request_name_wins_over_the_same_name_in_speakers_dir(named_handler, fish):
    config = InferenceConfig(known_speakers=[{"name": "big_fish", "audio": _b64(fish["small_fish"][0])}])
    voices = speaker_step.request_voices(named_handler.diarizer, config, named_handler.speakers.voices)
    small = named_handler.diarizer.embed_voice(fish["small_fish"][0])
    assert voices["big_fish"] @ small / np.linalg.norm(small) > 0.99
    assert named_handler.speakers.voices["big_fish"] @ voices["big_fish"] < 0.99


def test_matching_is_one_to_one_and_keeps_labels_below_the_threshold():
    centroids = {"SPEAKER_00": np.array([1.0, 0.1, 0.0]), "SPEAKER_01": np.array([0.9, 0.3, 0.0]),
                 "SPEAKER_02": np.array([0.0, 0.0, 1.0])}
    prints = {"ann": np.array([1.0, 0.0, 0.0]), "bob": np.array([0.6, 0.8, 0.0])}
    found = {m.speaker: m.name for m in match(centroids, prints, threshold=0.5)}
    assert found == {"SPEAKER_00": "ann", "SPEAKER_01": "bob"}  # both nearest to ann; each name once
    assert match(centroids, {"eve": np.array([0.0, 1.0, 0.0])}, threshold=0.5) == []


def _clip_of(seconds: float) -> str:
    return _b64(np.sin(np.arange(round(seconds * RATE)) * 0.05).astype(np.float32) * 0.3)


@pytest.mark.parametrize("known,status,fragment", [
    ([{"name": "ann", "audio": "short"}], 422, "known_speakers[0].audio[0]: the clip lasts 1.0 s"),
    ([{"name": "ann", "audio": "long"}], 422, "known_speakers[0].audio[0]: the clip is longer than 30 s"),
    ([{"name": "ann", "audio": base64.b64encode(b"not audio at all" * 64).decode()}], 415,
     "known_speakers[0].audio[0]"),
    ([{"name": "ann", "audio": "%%%"}], 400, "not base64"),
    ([{"name": "ann", "audio": "ok"}, {"name": "ann", "audio": "ok"}], 422, "a name appears twice"),
    ([{"name": " ", "audio": "ok"}], 422, "known_speakers.0.name"),
    ([{"name": f"n{i}", "audio": "ok"} for i in range(9)], 422, "at most 8 items"),
    ([{"name": "ann", "audio": ["ok"] * 4}], 422, "at most 3 items"),
    ([{"name": "SPEAKER_01", "audio": "ok"}], 422, "label of an unnamed speaker"),
    ([{"name": "a\nb", "audio": "ok"}], 422, "line breaks"),
])
def test_bad_known_speakers_are_4xx_naming_the_problem(named_handler, clip, known, status, fragment):
    clips = {"short": _clip_of(1.0), "long": _clip_of(31.0), "ok": _clip_of(2.5)}
    for speaker in known:
        audio = speaker["audio"] if isinstance(speaker["audio"], list) else [speaker["audio"]]
        speaker["audio"] = [clips.get(text, text) for text in audio]
    with pytest.raises(Exception) as info:
        named_handler({"inputs": clip, "parameters": {"known_speakers": known}})
    assert info.value.status == status and fragment in info.value.message


def test_known_speakers_without_diarization_is_refused(named_handler, tiny_handler, clip):
    known = [{"name": "ann", "audio": _clip_of(2.5)}]
    for handler, parameters, fragment in [(named_handler, {"diarize": False}, "diarize: false"),
                                          (tiny_handler, {}, "DIARIZATION_MODEL is not set")]:
        with pytest.raises(Exception) as info:
            handler({"inputs": clip, "parameters": {**parameters, "known_speakers": known}})
        assert info.value.status == 400 and "known_speakers needs diarization" in info.value.message
        assert fragment in info.value.message


def test_speakers_dir_problems_stop_the_start_naming_the_path(named_handler, settings_factory, tmp_path):
    (tmp_path / "ann").mkdir()
    with pytest.raises(ModelLoadError, match=f"SPEAKERS_DIR={tmp_path} needs diarization"):
        speaker_step.load_voices(settings_factory(speakers_dir=tmp_path), None)
    cases = [(tmp_path / "missing", "is not a readable directory"), (tmp_path, "holds no clips")]
    for path, fragment in cases:
        with pytest.raises(ModelLoadError, match=fragment) as info:
            speaker_step.load_voices(settings_factory(speakers_dir=path), named_handler.diarizer)
        assert str(path) in str(info.value)
    (tmp_path / "ann" / "notes.txt").write_text("not audio")
    with pytest.raises(ModelLoadError, match=str(tmp_path / "ann" / "notes.txt")):
        speaker_step.load_voices(settings_factory(speakers_dir=tmp_path), named_handler.diarizer)


@pytest.fixture(scope="module")
def named_server(diarizing_handler):
    """The OpenAI route over the diarizing handler, without SPEAKERS_DIR."""
    from whisper_endpoint.serving.app import create_app
    from whisper_endpoint.serving.settings import ServerSettings

    with live_server(create_app(ServerSettings(), handler=diarizing_handler)) as server:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-checked", max_retries=0)


def test_openai_known_speaker_fields_name_one_speaker_and_leave_the_other(named_server, excerpt, fish):
    audio, _ = excerpt
    vtt = named_server.audio.transcriptions.create(
        model="whisper-1", file=("barrel.flac", audio), response_format="vtt", language="en",
        extra_body={"chunk_length_s": FISH_ASR["chunk_length_s"]},
        known_speaker_names=["small_fish"], known_speaker_references=[_b64(fish["small_fish"][0], data_url=True)])
    assert "<v small_fish>" in vtt and "<v SPEAKER_0" in vtt and "big_fish" not in vtt  # big_fish not enrolled


@pytest.mark.parametrize("names,references,fragment", [
    (["ann", "bob"], ["ok"], "known_speaker_names[] has 2 entries and known_speaker_references[] 1"),
    (["a", "b", "c", "d", "e"], ["ok"] * 5, "at most 4 known speakers"),
    (["ann", "ann"], ["ok", "ok"], "'ann' appears more than once"),
    ([""], ["ok"], "a name is empty"),
    (["ann"], ["eleven"], "known_speaker_references[0]: the clip is longer than 10 s"),
    (["ann"], ["short"], "known_speaker_references[0]: the clip lasts 1.0 s"),
])
def test_openai_known_speaker_mistakes_are_4xx(named_server, clip, names, references, fragment):
    clips = {"ok": _clip_of(2.5), "eleven": _clip_of(11.0), "short": _clip_of(1.0)}
    with pytest.raises(openai.APIStatusError) as info:
        named_server.audio.transcriptions.create(
            model="whisper-1", file=("clip.flac", clip), response_format="vtt",
            known_speaker_names=names, known_speaker_references=[clips[r] for r in references])
    assert 400 <= info.value.status_code < 500 and fragment in info.value.message
