"""Every output format, rendered from a handler response (with and without speakers): exact text where the
format is a file, OpenAI's field names where it is a body."""

from __future__ import annotations

import json

import pytest

from whisper_endpoint import formats
from whisper_endpoint.formats import FORMATS, Context, render

PLAIN = {
    "text": "Hello there. General\tKenobi.", "duration": 3.5, "language": "en", "warnings": [], "speakers": [],
    "chunks": [{"text": " Hello there.", "timestamp": [0.0, 1.25]},
               {"text": " General\tKenobi.", "timestamp": [1.5, 3.5]}],
}
DIARIZED = {
    **PLAIN,
    "speakers": [{"speaker": "SPEAKER_00", "text": "Hello there.", "timestamp": [0.0, 1.25]},
                 {"speaker": "SPEAKER_01", "text": "General\tKenobi.", "timestamp": [1.5, 3.5]}],
    "speaker_turns": [{"start": 0.0, "end": 1.3, "speaker": "SPEAKER_00"},
                      {"start": 1.4, "end": 3.5, "speaker": "SPEAKER_01"}],
}


def test_txt_is_the_text_by_speaker_turn():
    assert render(DIARIZED, "txt").body == "SPEAKER_00: Hello there.\n\nSPEAKER_01: General\tKenobi.\n"
    assert render(PLAIN, "txt").body == "Hello there.\n\nGeneral\tKenobi.\n"
    assert render({**PLAIN, "chunks": []}, "txt").body == ""


def test_tsv_has_a_header_and_one_cue_a_row_with_tabs_only_between_cells():
    assert render(DIARIZED, "tsv").body == (
        "start\tend\tspeaker\ttext\n0.000\t1.250\tSPEAKER_00\tHello there.\n1.500\t3.500\tSPEAKER_01\tGeneral Kenobi.\n")
    assert render(PLAIN, "tsv").body.splitlines()[1] == "0.000\t1.250\t\tHello there."


def test_rttm_is_the_diarization_turns():
    assert render(DIARIZED, "rttm", Context(file_id="my call.flac")).body == (
        "SPEAKER my_call.flac 1 0.000 1.300 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
        "SPEAKER my_call.flac 1 1.400 2.100 <NA> <NA> SPEAKER_01 <NA> <NA>\n")


SEGMENT_CUES = Context(subtitles=formats.SubtitleOptions(subtitle_cues="segment"))


def test_srt_and_vtt_label_speaker_runs():
    assert render(DIARIZED, "srt").body.splitlines()[:3] == ["1", "00:00:00,000 --> 00:00:01,250",
                                                             "[SPEAKER_00] Hello there."]
    assert "<v SPEAKER_01>General Kenobi." in render(DIARIZED, "vtt").body  # a tab is a space on screen
    assert "<v SPEAKER_01>General\tKenobi." in render(DIARIZED, "vtt", SEGMENT_CUES).body
    assert render(PLAIN, "srt").body.splitlines()[2] == "Hello there. General Kenobi."  # both fit one cue
    assert render(PLAIN, "srt", SEGMENT_CUES).body.splitlines()[2] == "Hello there."


def test_word_chunks_with_their_segments_beside_them():
    """The web page asks for words and confidence: its subtitles are cut from the words (one cue per segment
    from the segments beside them), its txt and tsv are the segments, as when asked for segments."""
    words = {**PLAIN, "chunks": [{"text": " Hello", "timestamp": [0.0, 0.5], "probability": 0.9},
                                 {"text": " there.", "timestamp": [0.5, 1.25], "probability": 0.8},
                                 {"text": " General\tKenobi.", "timestamp": [1.5, 3.5], "probability": 0.7}],
             "segments": PLAIN["chunks"]}
    for name in ("txt", "tsv"):
        assert render(words, name).body == render(PLAIN, name).body
    for name in ("srt", "vtt"):
        assert render(words, name, SEGMENT_CUES).body == render(PLAIN, name, SEGMENT_CUES).body
    assert render(words, "srt").body == "1\n00:00:00,000 --> 00:00:03,500\nHello there. General Kenobi.\n"


def test_openai_bodies():
    assert render(PLAIN, "json").body == {"text": PLAIN["text"], "usage": {"type": "duration", "seconds": 3.5}}
    assert render(PLAIN, "json", Context(task="translate")).body == {"text": PLAIN["text"]}
    assert render(PLAIN, "text").body == PLAIN["text"] + "\n"
    verbose = render(PLAIN, "verbose_json").body
    assert verbose["language"] == "english" and [s["start"] for s in verbose["segments"]] == [0.0, 1.5]
    assert [s["speaker"] for s in render(DIARIZED, "diarized_json").body["segments"]] == ["SPEAKER_00", "SPEAKER_01"]
    assert "language" not in render(DIARIZED, "diarized_json").body["segments"][0]  # none said: none invented


def test_each_diarized_json_segment_says_its_language():
    # A mixed conversation (issue 58): each speaker entry has the language of its segments.
    mixed = {**DIARIZED, "speakers": [{**DIARIZED["speakers"][0], "language": "nl"},
                                      {**DIARIZED["speakers"][1], "language": "en"}]}
    segments = render(mixed, "diarized_json").body["segments"]
    assert [(s["speaker"], s["language"]) for s in segments] == [("SPEAKER_00", "nl"), ("SPEAKER_01", "en")]
    assert render(mixed, "tsv").body == render(DIARIZED, "tsv").body  # the other formats as before


CONFIDENT = {  # return_confidence with word chunks: the segments come beside the words
    **PLAIN,
    "chunks": [{"text": " Hello", "timestamp": [0.0, 0.5], "probability": 0.91},
               {"text": " there.", "timestamp": [0.5, 1.25], "probability": 0.42}],
    "segments": [{"text": " Hello there.", "timestamp": [0.0, 1.25], "avg_logprob": -0.3, "no_speech_prob": 0.01,
                  "compression_ratio": 0.9, "temperature": 0.0}],
}


@pytest.mark.parametrize("granularities,keys", [(("word",), {"words"}), (("segment",), {"segments"}),
                                                (("word", "segment"), {"words", "segments"})])
def test_verbose_json_gives_the_granularities_asked_for_with_confidence(granularities, keys):
    body = render(CONFIDENT, "verbose_json", Context(granularities=granularities)).body
    assert {"words", "segments"} & set(body) == keys
    if "segments" in keys:
        [segment] = body["segments"]
        assert (segment["text"], segment["avg_logprob"], segment["no_speech_prob"], segment["seek"]) == (
            " Hello there.", -0.3, 0.01, None)
    if "words" in keys:
        assert [(w["word"], w["probability"]) for w in body["words"]] == [("Hello", 0.91), ("there.", 0.42)]


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_renders_with_its_media_type_and_says_what_it_needs(name):
    rendered = render(DIARIZED, name)
    assert rendered.media_type == FORMATS[name].media_type
    text = rendered.body if isinstance(rendered.body, str) else json.dumps(rendered.body)
    assert "Hello there" in text or "SPEAKER_00" in text
    assert formats.timestamps_for(name) in ("none", "segment", "word")
    expected = {**({"return_speaker_turns": True} if FORMATS[name].turns else {}),
                **({"return_confidence": True} if name == "verbose_json" else {}),
                **({"return_timestamps": "word", "return_speaker_words": True} if name in ("srt", "vtt") else {})}
    assert formats.parameters_for(name) == expected
    if name in ("srt", "vtt"):  # one cue per segment needs no words
        assert formats.parameters_for(name, {"subtitle_cues": "segment"}) == {}
        assert formats.timestamps_for(name, request={"subtitle_cues": "segment"}) == "segment"


def test_the_command_line_prints_any_format():
    import os
    import subprocess
    import sys

    from support.paths import CLIPS, ROOT
    from support.serving import CLIP, TEXT

    done = subprocess.run([sys.executable, "-m", "whisper_endpoint", "--format", "tsv", str(CLIPS / CLIP)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ASR_MODEL": "embedded:tiny.en", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    header, row = done.stdout.splitlines()
    assert header == "start\tend\tspeaker\ttext" and row.endswith(f"\t\t{TEXT}")
