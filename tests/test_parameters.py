"""Request parameters and settings: validation that names the problem and the valid values; one schema,
read by the flow and documented by the README."""

import re
from pathlib import Path

import pytest

from whisper_endpoint.config import InferenceConfig, ModelSettings
from whisper_endpoint.errors import InvalidParameterError
from whisper_endpoint.request import parse_parameters


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


# --- one schema: every field is read by the flow, and the README's table says what the schema says ----------

PACKAGE = Path(__file__).resolve().parents[1] / "whisper_endpoint"
README = Path(__file__).resolve().parents[1] / "README.md"


def _flow_source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py") if path.name != "config.py")


def test_every_request_field_is_read_by_the_flow_or_declared_route_only():
    source = _flow_source()
    unread = [name for name in InferenceConfig.model_fields
              if name not in InferenceConfig.ROUTE_ONLY
              and not re.search(rf"\.{name}\b|[\"']{name}[\"']", source)]
    assert unread == [], f"fields nothing reads (use them, or declare them in InferenceConfig.ROUTE_ONLY): {unread}"


def _readme_rows() -> dict[str, str]:
    """name -> default cell of the README's parameter table."""
    table = README.read_text(encoding="utf-8").split("### Parameters (`InferenceConfig`)", 1)[1].split("\n### ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`"):
            for name in re.findall(r"`(\w+)`", cells[0]):
                rows[name] = cells[1]
    return rows


def _shown(default) -> set[str]:
    """How the README writes a default: ``None`` as none or detect, booleans in lower case."""
    if default is None:
        return {"none", "detect"}
    if isinstance(default, bool):
        return {str(default).lower()}
    return {str(default)}


def test_the_readme_parameter_table_matches_the_schema():
    rows = _readme_rows()
    assert set(rows) == set(InferenceConfig.model_fields), "README parameter table vs InferenceConfig fields"
    wrong = {name: (rows[name], field.default) for name, field in InferenceConfig.model_fields.items()
             if rows[name].split()[0].strip("`") not in _shown(field.default)}
    assert wrong == {}, "README defaults that differ from the schema's"
