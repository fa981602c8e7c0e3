"""Request parameters and settings: validation that names the problem and the valid values; one schema,
read by the flow and described for docs/parameters.md."""

import base64
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pytest
from pydantic import BaseModel

from support.audio import decode_reference, encode, read_clip
from support.paths import CLIPS
from support.serving import CLIP
from whisper_endpoint import formats
from whisper_endpoint.asr import cost, decoding_options
from whisper_endpoint.asr.ctranslate2.model import RequestPipeline
from whisper_endpoint.asr.long_form import windows
from whisper_endpoint.core.config import InferenceConfig, ModelSettings
from whisper_endpoint.core.errors import ClientError, InvalidParameterError
from whisper_endpoint.pipeline.request import parse_parameters


def test_defaults_match_the_reference_handler():
    config, warnings = parse_parameters(None)
    assert (config.task, config.batch_size, config.chunk_length_s, config.sampling_rate) == ("transcribe", 24, 30, 16000)
    assert (config.assisted, config.beam_size, config.return_timestamps) == (False, 1, "segment")
    assert warnings == []


@pytest.mark.parametrize("value,code", [("ja", "ja"), ("japanese", "ja"), ("Japanese", "ja"), ("english", "en"),
                                        ("mandarin", "zh"), ("auto", None), (None, None)])
def test_language_names_and_codes(value, code):
    assert InferenceConfig(language=value).language == code


def test_unknown_parameters_are_ignored_and_reported():
    config, warnings = parse_parameters({"batch_size": 8, "temprature": 0.2, "foo": 1})
    assert config.batch_size == 8
    assert warnings == ["ignored unknown parameter 'foo'", "ignored unknown parameter 'temprature'"]


@pytest.mark.parametrize("value,expected", [(True, "segment"), (False, "none"), ("word", "word"), (None, "none")])
def test_return_timestamps_accepts_the_pipeline_convention(value, expected):
    assert InferenceConfig(return_timestamps=value).return_timestamps == expected


@pytest.mark.parametrize("parameters,fragment", [
    ({"batch_size": "many"}, "parameters.batch_size"),
    ({"batch_size": 0}, "greater than or equal to 1"),
    ({"batch_size": 2.5}, "parameters.batch_size"),
    ({"beam_size": 11}, "less than or equal to 10"),
    ({"chunk_length_s": 31}, "parameters.chunk_length_s"),
    ({"task": "summarize"}, "'transcribe' or 'translate'"),
    ({"return_timestamps": "char"}, "'none', 'segment' or 'word'"),
    ({"assisted": "perhaps"}, "parameters.assisted"),
    ({"sampling_rate": 10}, "parameters.sampling_rate"),
    ({"num_speakers": 0}, "parameters.num_speakers"),
    ({"language": 42}, "language code or name"),
])
def test_wrong_types_and_ranges(parameters, fragment):
    with pytest.raises(InvalidParameterError) as info:
        parse_parameters(parameters)
    assert fragment in str(info.value)
    assert info.value.status == 422


def test_unknown_language_lists_the_valid_codes():
    with pytest.raises(InvalidParameterError, match=r"unknown language 'klingon'.*codes: af, am, ar"):
        parse_parameters({"language": "klingon"})


def test_min_speakers_above_max_speakers():
    with pytest.raises(InvalidParameterError, match=r"min_speakers must be smaller than or equal to max_speakers \(here: 4 > 2\)"):
        parse_parameters({"min_speakers": 4, "max_speakers": 2})


def test_num_speakers_outside_bounds():
    with pytest.raises(InvalidParameterError, match="num_speakers=5 lies outside"):
        parse_parameters({"num_speakers": 5, "max_speakers": 3})


def test_parameters_must_be_an_object():
    with pytest.raises(InvalidParameterError, match="'parameters' must be an object, got list"):
        parse_parameters([1, 2])


def test_settings_read_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ASR_MODEL", "embedded:tiny.en")
    monkeypatch.setenv("COMPUTE_TYPE", "float32")
    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path))
    settings = ModelSettings()
    assert (settings.asr_model, settings.compute_type, settings.model_cache_dir) == ("embedded:tiny.en", "float32", tmp_path)
    assert settings.assistant_model is None and settings.diarization_model is None


@pytest.mark.parametrize("variable", ["HF_TOKEN", "HF_HUB_TOKEN"])
def test_token_from_either_variable_and_never_printed(monkeypatch, variable):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_HUB_TOKEN", raising=False)
    monkeypatch.setenv(variable, "hf_secretvalue123")
    settings = ModelSettings()
    assert settings.hf_token.get_secret_value() == "hf_secretvalue123"
    assert "hf_secretvalue123" not in repr(settings) and "hf_secretvalue123" not in str(settings.model_dump())


def test_bad_setting_is_rejected(monkeypatch):
    monkeypatch.setenv("COMPUTE_TYPE", "int4")
    with pytest.raises(ValueError, match="compute_type"):
        ModelSettings()


# --- one schema: every field has an effect and a description (docs/parameters.md is generated) ----------
#
# Each field of InferenceConfig, set to a value other than its default, must change what the real
# decoder is asked (faster-whisper's model and batched pipeline, the diarizer: their calls recorded by
# wrapping them, still running them) or what the response holds; the same request without the field must
# not show that change (so the effect comes from the field, not from the input). Fields the handler does
# not read (InferenceConfig.ROUTE_ONLY: the routes hand them to the renderers) are checked in RENDERED:
# a body of formats.render changes with them.

VOICE = "asterisk_check-number-dial-again.flac"  # 2.2 s: the diarized rows' audio (known_speakers needs 2 s)


@dataclass
class Observed:
    """One request: the response (or the client error it raised) and the calls the models received."""

    response: dict | None = None
    error: str | None = None
    decode: list[dict] = field(default_factory=list)  # WhisperModel.transcribe (one window, second pass)
    batch: list[dict] = field(default_factory=list)  # the batched pipeline's transcribe, one call a batch
    diarize: list[dict] = field(default_factory=list)

    def warned(self, fragment: str) -> bool:
        return self.response is not None and any(fragment in w for w in self.response["warnings"])


@dataclass(frozen=True)
class Effect:
    value: object
    seen: Callable[[Observed], bool]  # true with the value, false without it
    handler: str = "tiny_handler"  # a fixture of conftest.py
    audio: str = "array"  # a key of _inputs
    base: tuple = ()  # parameters both runs set, as (name, value) pairs


def _words_of(o: Observed) -> bool:
    return bool(o.response["speakers"]) and all("words" in s for s in o.response["speakers"])


def _labels(o: Observed) -> set:
    return {s["speaker"] for s in (o.response or {}).get("speakers", [])}


BATCHED = (("chunk_length_s", 4),)  # with short windows (_patch_for): 4 s of speech in two windows
DIARIZED = {"handler": "diarizing_handler", "audio": "voice"}
MULTICHANNEL = (("multichannel", True),)

EFFECTS: dict[str, Effect] = {
    "task": Effect("translate", lambda o: "task 'translate' needs a multilingual model" in (o.error or "")),
    # Without the second pass (a cheaper request, and recover_dropped_speech's own).
    "batch_size": Effect(2, lambda o: bool(o.batch) and all(c["batch_size"] == 2 for c in o.batch),
                         audio="batched", base=(*BATCHED, ("recover_dropped_speech", False))),
    "assisted": Effect(True, lambda o: o.warned("'assisted' needs the transformers backend")),
    "chunk_length_s": Effect(4, lambda o: bool(o.batch) and all(
        w["end"] - w["start"] <= 4 for c in o.batch for w in c["clip_timestamps"]), audio="batched"),
    # 12 kHz samples resampled to 16 kHz: 4/3 as many (8 kHz made tiny.en loop for 20 s of CPU time).
    "sampling_rate": Effect(12000, lambda o: len(o.decode) == 1 and abs(
        o.decode[0]["samples"] - _clip_length() * 4 / 3) <= 2),
    "language": Effect("en", lambda o: bool(o.decode) and all(c["language"] == "en" for c in o.decode)),
    # tiny.en cannot decode Dutch: checked before any decoding (issue 58; the decoding per language is
    # tested on the base model in test_languages.py).
    "languages": Effect(["en", "nl"], lambda o: "languages ['nl'] need a multilingual model" in (o.error or "")),
    "num_speakers": Effect(2, lambda o: [c["num_speakers"] for c in o.diarize] == [2], **DIARIZED),
    "min_speakers": Effect(2, lambda o: [c["min_speakers"] for c in o.diarize] == [2], **DIARIZED),
    "max_speakers": Effect(3, lambda o: [c["max_speakers"] for c in o.diarize] == [3], **DIARIZED),
    "beam_size": Effect(3, lambda o: bool(o.decode) and all(c["beam_size"] == 3 for c in o.decode)),
    "return_timestamps": Effect("word", lambda o: bool(o.decode) and all(
        c["word_timestamps"] for c in o.decode)),
    "initial_prompt": Effect("Voicemail menu.", lambda o: bool(o.decode) and all(
        "Voicemail menu." in (c["initial_prompt"] or "") for c in o.decode)),
    "vad_filter": Effect(True, lambda o: bool(o.decode) and all(
        c["vad_filter"] is True for c in o.decode)),
    "temperature": Effect(0.5, lambda o: bool(o.decode) and all(
        c["temperature"] == 0.5 for c in o.decode)),
    "hotwords": Effect("Asterisk", lambda o: bool(o.decode) and all(
        "Asterisk" in (c["hotwords"] or "") for c in o.decode)),
    "condition_on_previous_text": Effect(False, lambda o: bool(o.decode) and all(
        c["condition_on_previous_text"] is False for c in o.decode)),
    "no_speech_threshold": Effect(0.3, lambda o: bool(o.decode) and all(
        c["no_speech_threshold"] == 0.3 for c in o.decode)),
    # With word chunks (return_timestamps, same request) the segments' confidence comes beside them.
    "return_confidence": Effect(True, lambda o: bool(o.response.get("segments")) and all(
        "avg_logprob" in c for c in o.response["segments"])),
    # Silence: nothing reaches the decoder unless non-speech is kept.
    "drop_non_speech": Effect(False, lambda o: len(o.decode) == 1, audio="silence"),
    # Without it no window remainder reaches the sequential decoder (the run with it must have some: greedy
    # leaves remainders on this input, a beam finishes its windows).
    "recover_dropped_speech": Effect(False, lambda o: o.response["decoding"]["remainders_decoded_again"] == 0
                                     and not any("max_new_tokens" in c for c in o.decode),
                                     audio="batched", base=(*BATCHED, ("beam_size", 1))),
    "diarize": Effect(False, lambda o: o.diarize == [] and o.response["speakers"] == [], **DIARIZED),
    "return_speaker_turns": Effect(True, lambda o: bool(o.response.get("speaker_turns")), **DIARIZED),
    "return_speaker_words": Effect(True, _words_of, **DIARIZED),
    "multichannel": Effect(True, lambda o: _labels(o) == {"CHANNEL_0", "CHANNEL_1"} and len(o.decode) == 2,
                           audio="stereo"),
    "channel_names": Effect(("left", "right"), lambda o: _labels(o) == {"left", "right"}, audio="stereo",
                            base=MULTICHANNEL),
    "diarize_channels": Effect(True, lambda o: len(o.diarize) == 2, "diarizing_handler", audio="stereo",
                               base=MULTICHANNEL),
    # The request's own recording enrolled: its one speaker takes the name.
    "known_speakers": Effect(({"name": "Enrolled", "audio": base64.b64encode(read_clip(VOICE)).decode()},),
                             lambda o: [m["name"] for m in o.response.get("speaker_matches", [])] == ["Enrolled"],
                             **DIARIZED),
    "return_speaker_embeddings": Effect(True, lambda o: bool(o.response.get("speaker_embeddings", {}).get(
        "speakers")), **DIARIZED),
    # A library holding the request's own voice: it names the speaker unless the request turns it off.
    "speaker_library": Effect(False, lambda o: "speaker_matches" not in o.response, handler="library_handler",
                              audio="voice"),
}

# Fields sent in one request (to keep the test short): each sets a decoder argument or a response key of
# its own, so each check still sees its own field. Every other field has a request to itself.
GROUPS = {
    "decoder arguments": ("language", "beam_size", "return_timestamps", "initial_prompt", "vad_filter",
                          "temperature", "hotwords", "condition_on_previous_text", "no_speech_threshold",
                          "sampling_rate", "assisted", "return_confidence"),
    "speaker counts": ("num_speakers", "min_speakers", "max_speakers"),
    "speaker extras": ("return_speaker_turns", "return_speaker_words", "return_speaker_embeddings"),
}

# ROUTE_ONLY fields: name -> (value, the format whose body it changes).
RENDERED: dict[str, tuple[object, str]] = {
    "subtitle_cues": ("segment", "srt"), "max_line_width": (10, "srt"), "max_line_count": (1, "srt"),
    "max_words_per_line": (2, "srt"), "max_cue_duration": (1.0, "srt"), "min_cue_duration": (5.0, "srt"),
    "highlight_words": (True, "vtt"),
}


@lru_cache(maxsize=None)
def _clip() -> np.ndarray:
    return decode_reference(CLIPS / CLIP)


def _clip_length() -> int:
    return len(_clip())


@lru_cache(maxsize=None)
def _inputs(name: str):
    """The request's ``inputs`` for an Effect's ``audio`` (all short: a few seconds at most)."""
    if name == "array":  # no sampling_rate of its own: the parameter's applies
        return {"array": _clip()}
    if name == "voice":
        return read_clip(VOICE)
    if name == "batched":
        other = decode_reference(CLIPS / VOICE)
        return {"array": np.concatenate([_clip(), np.zeros(4000, np.float32), other]), "sampling_rate": 16000}
    if name == "silence":
        return {"array": np.zeros(2 * 16000, np.float32), "sampling_rate": 16000}
    if name == "stereo":  # a different clip on each channel
        other = decode_reference(CLIPS / VOICE)
        left = np.pad(_clip(), (0, max(0, len(other) - _clip_length())))
        return encode(np.stack([left, other[: len(left)]]), 16000, "wav", "pcm_s16le", channels=2)
    raise KeyError(name)


def _requests() -> dict[str, list[str]]:
    """Test id -> the fields its request sets: a group's name, or a field's own."""
    grouped = {name for names in GROUPS.values() for name in names}
    return {**{name: list(names) for name, names in GROUPS.items()},
            **{name: [name] for name in EFFECTS if name not in grouped}}


def _parameters(effects: list[Effect], fields: dict[str, Effect]) -> dict:
    parameters = dict(effects[0].base)
    for name, effect in fields.items():  # the table holds lists as tuples (its rows are frozen)
        parameters[name] = list(effect.value) if isinstance(effect.value, tuple) else effect.value
    return parameters


def _patch_for(audio: str, monkeypatch) -> None:
    if audio == "batched":
        monkeypatch.setattr(cost, "MIN_WINDOW_S", 4)  # two windows from 4 s (as conftest's short_windows)
        # Every window's end after its last segment is decoded again (the production floor, 1 s, is
        # VAD padding): the second pass runs on 4 s of audio, so recover_dropped_speech can be seen.
        monkeypatch.setattr(windows, "MIN_LEFTOVER_S", 0.02)


def observe(handler, inputs, parameters: dict) -> Observed:
    """Run one request on the real handler, recording the calls its models receive."""
    seen = Observed()
    model = handler.asr.model
    decode, batch = model.transcribe, RequestPipeline.transcribe
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model, "transcribe", lambda audio, **kw: (
            seen.decode.append({"samples": len(audio), **kw}), decode(audio, **kw))[1])
        patch.setattr(RequestPipeline, "transcribe", lambda self, audio, **kw: (
            seen.batch.append(kw), batch(self, audio, **kw))[1])
        if handler.diarizer is not None:
            diarize = handler.diarizer.diarize
            patch.setattr(handler.diarizer, "diarize", lambda samples, **kw: (
                seen.diarize.append(kw), diarize(samples, **kw))[1])
        try:
            seen.response = handler({"inputs": inputs, "parameters": parameters})
        except ClientError as exc:
            seen.error = f"{exc.status}: {exc}"
    return seen


@pytest.fixture(scope="module")
def library_handler(diarizing_handler, tmp_path_factory):
    """The diarizing handler with a speaker library holding VOICE's speaker (the server gives handlers one)."""
    from whisper_endpoint.audio.decode import decode_file
    from whisper_endpoint.speakers.library import VoiceLibrary

    library = VoiceLibrary(tmp_path_factory.mktemp("library") / "speakers.sqlite",
                           diarizing_handler.diarizer.embedding_model, max_speakers=2)
    voice = decode_file(read_clip(VOICE), max_seconds=60).samples
    library.add("Enrolled", [diarizing_handler.diarizer.embed_voice(voice)])
    return diarizing_handler.with_library(library)


@pytest.fixture(scope="module")
def runs() -> dict:
    """Every request run here, by (handler, audio, parameters): a group's request may be another's baseline."""
    return {}


@pytest.mark.parametrize("fields", sorted(_requests().items()), ids=lambda item: item[0])
def test_every_request_field_changes_the_decoders_calls_or_the_response(fields, request, runs, monkeypatch):
    effects = {name: EFFECTS[name] for name in fields[1]}
    first = next(iter(effects.values()))
    assert all((e.handler, e.audio, e.base) == (first.handler, first.audio, first.base) for e in effects.values())
    handler = request.getfixturevalue(first.handler)
    _patch_for(first.audio, monkeypatch)

    def run(parameters: dict) -> Observed:
        key = (first.handler, first.audio, repr(sorted(parameters.items())))
        if key not in runs:
            runs[key] = observe(handler, _inputs(first.audio), parameters)
        return runs[key]

    baseline, changed = run(_parameters(list(effects.values()), {})), run(_parameters(list(effects.values()), effects))
    assert baseline.error is None, baseline.error
    shown = [name for name, effect in effects.items() if effect.seen(baseline)]
    assert shown == [], "the request without these fields already shows their effect"
    missing = [name for name, effect in effects.items() if not effect.seen(changed)]
    assert missing == [], f"fields without their effect: {missing} ({changed})"


def test_every_field_has_an_effect_in_the_table_and_route_only_ones_change_a_rendered_body(request):
    assert set(EFFECTS) | set(RENDERED) == set(InferenceConfig.model_fields), \
        "give the field a row in EFFECTS (or in RENDERED if it is in InferenceConfig.ROUTE_ONLY)"
    assert set(RENDERED) == InferenceConfig.ROUTE_ONLY and not set(EFFECTS) & InferenceConfig.ROUTE_ONLY
    if RENDERED:
        result = request.getfixturevalue("tiny_handler")({"inputs": _inputs("batched"),
                                                          "parameters": {"return_timestamps": "word"}})
    unchanged = [name for name, (value, fmt) in RENDERED.items()
                 if formats.render(result, fmt, _context_with(name, value)).body == formats.render(result, fmt).body]
    assert unchanged == [], "route-only fields that change no rendered body"


def _context_with(name: str, value) -> formats.Context:
    """The renderers' Context with one route-only option set, on Context itself or in one of its option
    groups (a pydantic model, validated again)."""
    context = formats.Context()
    for slot in dataclasses.fields(context):
        if slot.name == name:
            return dataclasses.replace(context, **{name: value})
        group = getattr(context, slot.name)
        if isinstance(group, BaseModel) and name in type(group).model_fields:
            options = type(group).model_validate({**group.model_dump(), name: value})
            return dataclasses.replace(context, **{slot.name: options})
    raise AssertionError(f"{name} is ROUTE_ONLY, but no field of formats.Context carries it to the renderers")


def test_every_parameter_has_a_description_for_the_generated_table():
    """docs/parameters.md's table is generated from the fields (scripts/generate_docs.py): a field without a
    description would be a row that says nothing."""
    silent = [name for name, field in InferenceConfig.model_fields.items() if not (field.description or "").strip()]
    assert silent == []


@pytest.mark.slow  # long audio, twice
def test_long_audio_decodes_with_a_beam_unless_the_request_sets_one(tiny_handler, monkeypatch):
    """No beam_size: greedy within one window (as the reference handler), LONG_FORM_BEAM_SIZE over batched
    windows and their second pass; beam_size 1 keeps long audio greedy (the cheaper mode)."""
    _patch_for("batched", monkeypatch)
    wide, greedy = decoding_options.LONG_FORM_BEAM_SIZE, 1
    default = observe(tiny_handler, _inputs("batched"), dict(BATCHED))
    assert wide > 1 and default.batch and {c["beam_size"] for c in default.batch + default.decode} == {wide}
    assert default.response["decoding"]["beam_size"] == wide
    asked = observe(tiny_handler, _inputs("batched"), {**dict(BATCHED), "beam_size": greedy})
    assert asked.batch and {c["beam_size"] for c in asked.batch + asked.decode} == {greedy}
    short = observe(tiny_handler, _inputs("array"), {})
    assert short.decode and {c["beam_size"] for c in short.decode} == {greedy}
