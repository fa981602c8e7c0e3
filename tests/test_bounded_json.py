"""Issue 74: every JSON value a request carries is bounded before it is parsed.

A parameter sent as text that holds JSON (``languages`` and ``channel_names`` as a JSON list, in the query
string, a form field or a string inside the JSON body) and the JSON body itself are checked for length and
nesting depth before a parser sees them (``whisper_endpoint/core/bounded_json.py``); whatever the parser
still finds wrong (a ``RecursionError``, a ``ValueError``, an ``OverflowError``...) is a 4xx naming what
was sent, never a 500.

The properties draw deep, long and broken values through the real parsing functions: the handler's
``parse_request`` / ``parse_parameters``, ``text_parameters`` (query string and OpenAI form fields) and a
job's submission check (``jobs.stored.store``). ``BOUNDED_JSON_EXAMPLES`` in the environment sets how many
(100 in the fast tier; the slow tier's test draws at least 2,000). The last test sends ``languages`` =
``"[" * 5000`` to a real server on loopback, on every surface that takes parameters.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support.serving import live_server
from whisper_endpoint.adapters.errors import InvalidBodyError
from whisper_endpoint.adapters.payloads import text_parameters, toolkit_payload
from whisper_endpoint.core import bounded_json
from whisper_endpoint.core.errors import ClientError, InvalidParameterError
from whisper_endpoint.jobs import JobSettings, stored
from whisper_endpoint.pipeline.request import parse_parameters, parse_request
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.settings import ServerSettings

# Parameters whose text form is JSON (a list); the others are drawn the same way: 4xx or valid, as well.
JSON_TEXT_PARAMETERS = ["languages", "channel_names"]
OTHER_PARAMETERS = ["known_speakers", "hotwords", "initial_prompt", "language", "temperature", "return_timestamps"]
PARAMETERS = JSON_TEXT_PARAMETERS + OTHER_PARAMETERS
DEEP = "[" * 5000
WAV_HEADER = "UklGRg=="  # base64 of b"RIFF": the audio is never reached when the parameters are wrong
EXAMPLES = int(os.environ.get("BOUNDED_JSON_EXAMPLES", "100"))


def _examples(count: int) -> settings:
    return settings(max_examples=count, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- hostile text --------------------------------------------------------------------------------------

_PIECES = ["[", "]", "{", "}", '"', "\\", ",", ":", "1e999999", "-1e999999", "9" * 5000, "NaN", "Infinity",
           '"en"', '"\\ud800"', "\\ud800", "\ud800", "\udfff", "\x00", "null", "true", "en", "nl", " ", "\n",
           '{"name": "Ann", "audio": "AAAA"}', "\u00e9", "\U0001f600", '"\\"', '"]"', '"[["']


@st.composite
def hostile_text(draw) -> str:
    """Deeply nested, very long or broken JSON: runs of brackets, huge numbers, long strings, lone
    surrogates, escapes, and valid lists around them."""
    shape = draw(st.sampled_from(["deep", "long", "pieces", "wrapped", "text"]))
    if shape == "deep":
        opener, closer = draw(st.sampled_from([("[", "]"), ("{", "}"), ('{"a":', "}"), ("[1,", "]"), ('["', '"]'),
                                               ("[{", "}]"), ('["\\"', "]")]))
        depth = draw(st.integers(1, 20_000))
        closed = draw(st.booleans())
        middle = '"en"' if opener in ('{"a":', "[1,") else ""
        return opener * depth + middle + (closer * depth if closed else "")
    if shape == "long":
        piece = draw(st.sampled_from(['"en", ', "a" * 100, '"' + "x" * 1000 + '", ', "1,", "[],", "\\\\", '"[", ']))
        count = draw(st.integers(1, 200_000 // len(piece)))
        return "[" + piece * count + draw(st.sampled_from(["]", '"en"]', ""]))
    if shape == "pieces":
        return "".join(draw(st.lists(st.sampled_from(_PIECES), max_size=60)))
    if shape == "wrapped":
        inner = draw(st.lists(st.sampled_from(_PIECES), max_size=8))
        return json.dumps(inner) if draw(st.booleans()) else "[" + ",".join(inner) + "]"
    return draw(st.text(max_size=200))


@st.composite
def hostile_body(draw) -> str:
    """A JSON body: hostile text as the whole body, as a parameter's raw JSON value, as the inputs, or as a
    parameter's string."""
    text = draw(hostile_text())
    where = draw(st.sampled_from(["body", "parameter", "inputs", "array", "string"]))
    name = draw(st.sampled_from(PARAMETERS))
    if where == "body":
        return text
    if where == "parameter":
        return f'{{"inputs": "{WAV_HEADER}", "parameters": {{"{name}": {text}}}}}'
    if where == "inputs":
        return f'{{"inputs": {text}}}'
    if where == "array":
        return f'{{"inputs": {{"array": {text}, "sampling_rate": 16000}}}}'
    return json.dumps({"inputs": WAV_HEADER, "parameters": {name: text}})


# --- the parsers, as each surface meets a value ------------------------------------------------------------


def _job(body: bytes | None, kind: str, parameters: dict):
    """A job's submission check (``POST /jobs``): the upload as a file, checked and rewritten."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload"
        path.write_bytes(body or b"")
        return stored.store(path, kind, parameters)


def _body_surfaces(body: bytes, jobs: bool = True):
    """A JSON body: the toolkit's routes (``/``, ``/predict``, ``/invocations``) and ``POST /jobs``."""
    yield lambda: parse_request(toolkit_payload(body, "application/json", {}), max_seconds=60)
    if jobs:
        yield lambda: _job(body, "application/json", {})


def _surfaces(name: str, value: str):
    """A parameter's text as each parser meets it: a string inside the JSON body, the query string and
    the OpenAI form's extra fields (``text_parameters``), beside a JSON body, and a job's query string."""
    yield lambda: parse_parameters({name: value})
    yield lambda: parse_parameters(text_parameters([(name, value)]))
    yield from _body_surfaces(json.dumps({"inputs": WAV_HEADER, "parameters": {name: value}}).encode(
        "utf-8", "surrogatepass"))
    yield lambda: parse_request(toolkit_payload(f'{{"inputs": "{WAV_HEADER}"}}'.encode(), "application/json",
                                                text_parameters([(name, value)])), max_seconds=60)
    yield lambda: _job(None, "audio/flac", text_parameters([(name, value)]))


def _is_4xx_or_parses(call) -> None:
    try:
        call()
    except ClientError as exc:
        assert 400 <= exc.status < 500, exc
        str(exc).encode("utf-8")  # the message goes into a JSON answer: no lone surrogates in it
    # anything else (RecursionError, OverflowError...) fails the test as it is


def _check_every_surface(name: str, value: str) -> None:
    for call in _surfaces(name, value):
        _is_4xx_or_parses(call)


@_examples(EXAMPLES)
@given(name=st.sampled_from(PARAMETERS), value=hostile_text())
@example(name="languages", value=DEEP)
@example(name="channel_names", value=DEEP)
@example(name="languages", value="{" * 5000)
@example(name="languages", value="[" * 500 + "]" * 500)
@example(name="languages", value='["\\ud800"]')
@example(name="languages", value="[1e999999]")
@example(name="languages", value="[" + "9" * 5000 + "]")
@example(name="channel_names", value='["' + "\\" * 5001 + '"]')
def test_a_json_parameter_is_a_4xx_or_parses(name, value):
    _check_every_surface(name, value)


@_examples(EXAMPLES)
@given(body=hostile_body())
@example(body=DEEP)
@example(body='{"inputs": "UklGRg==", "parameters": ' + "[" * 5000 + "}")
@example(body='{"inputs": ' + '{"a":' * 5000 + "1" + "}" * 5001)
@example(body='{"inputs": {"array": [0.1, 1' + "0" * 400 + "]}}")  # an integer no float holds: OverflowError
@example(body='{"inputs": {"array": [' + "0.1, " * 2000 + "1" + "0" * 400 + "]}}")  # the same in a long run
@example(body='{"inputs": "UklGRg==", "parameters": {"language": "\\ud800"}}')
def test_a_hostile_json_body_is_a_4xx(body):
    _check_body(body)


def _check_body(body: str) -> None:
    for call in _body_surfaces(body.encode("utf-8", "surrogatepass")):
        _is_4xx_or_parses(call)


@pytest.mark.slow
@_examples(max(2000, EXAMPLES))
@given(name=st.sampled_from(PARAMETERS), value=hostile_text(), body=hostile_body())
def test_json_parameters_and_bodies_are_4xx_or_parse_many(name, value, body):
    _check_every_surface(name, value)
    _check_body(body)


def test_a_huge_integer_in_a_job_array_is_a_4xx():
    _is_4xx_or_parses(lambda: _job(b'{"inputs": {"array": [0.1, 1' + b"0" * 400 + b"]}}", "application/json", {}))


@pytest.mark.parametrize("name", JSON_TEXT_PARAMETERS)
@pytest.mark.parametrize(("value", "refused"), [
    (DEEP, "nested more than 8 levels"), ("[" + "{" * 5000, "nested more than 8 levels"),
    ('["a",' * 3000, "more than the 8192 accepted"), ("[" * 9 + "]" * 9, "nested more than 8 levels"),
    ("[" + '"en",' * 5000 + '"en"]', "more than the 8192 accepted"), ("en," * 5000 + "en", "more than the 8192"),
], ids=["deep", "braces", "open-list", "9-levels", "long-list", "long-commas"])
def test_deep_or_long_json_parameters_are_422s_naming_them(name, value, refused):
    """Refused by the bound, before any parser runs, with a 422 naming the parameter and the limit."""
    for call in _surfaces(name, value):
        with pytest.raises(InvalidParameterError) as caught:
            call()
        message = str(caught.value)
        assert caught.value.status == 422 and f"parameters.{name}" in message and refused in message, message


@pytest.mark.parametrize("body", [DEEP, '{"inputs": "UklGRg==", "parameters": {"a": ' + "[" * 40 + "]" * 40 + "}}",
                                  '{"inputs": ' + '{"a":' * 5000 + "1" + "}" * 5001])
def test_a_deep_json_body_is_a_400_naming_the_limit(body):
    for call in _body_surfaces(body.encode()):
        with pytest.raises(InvalidBodyError) as caught:
            call()
        assert caught.value.status == 400 and "nested more than 32 levels" in str(caught.value), caught.value


def test_real_json_passes_the_bound():
    assert bounded_json.loads('["nl", "en"]', "languages") == ["nl", "en"]
    assert bounded_json.loads(json.dumps({"a": "[" * 5000}), "x", max_length=None) == {"a": "[" * 5000}
    assert bounded_json.loads(json.dumps([[[[[[['\\"]]]' + "]" * 50]]]]]]]), "x", max_depth=7)
    assert not bounded_json.nested_within(json.dumps([[[[[[[[1]]]]]]]]), 7)
    assert parse_parameters({"languages": '["nl", "en"]'})[0].languages == ["nl", "en"]
    assert parse_parameters({"languages": "nl,en"})[0].languages == ["nl", "en"]
    assert parse_parameters({"channel_names": '["left", "right"]'})[0].channel_names == ["left", "right"]
    body = json.dumps({"inputs": WAV_HEADER, "parameters": {"known_speakers": [{"name": "Ann", "audio": ["AAAA"]}],
                                                            "languages": ["nl", "en"]}}).encode()
    assert toolkit_payload(body, "application/json", {})["parameters"]["languages"] == ["nl", "en"]


# --- a real server ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tiny_handler, tmp_path_factory):
    jobs = JobSettings(db=tmp_path_factory.mktemp("jobs") / "jobs.sqlite")
    with live_server(create_app(ServerSettings(), handler=tiny_handler, job_settings=jobs)) as running:
        yield running.url


def test_deep_languages_are_a_422_naming_them_on_every_surface(server, clip):
    body = {"inputs": base64.b64encode(clip).decode(), "parameters": {"languages": DEEP}}
    flac = {"Content-Type": "audio/flac"}
    answers = {
        "JSON body": requests.post(f"{server}/predict", json=body, timeout=60),
        "query string": requests.post(f"{server}/predict", params={"languages": DEEP}, data=clip, headers=flac,
                                      timeout=60),
        "OpenAI form": requests.post(f"{server}/v1/audio/transcriptions", files={"file": ("a.flac", clip)},
                                     data={"languages": DEEP}, timeout=60),
        "POST /jobs, query string": requests.post(f"{server}/jobs", params={"languages": DEEP}, data=clip,
                                                  headers=flac, timeout=60),
        "POST /jobs, JSON body": requests.post(f"{server}/jobs", json=body, timeout=60),
    }
    wrong = {where: f"{answer.status_code} {answer.text[:200]}" for where, answer in answers.items()
             if answer.status_code != 422 or "languages" not in answer.text}
    assert not wrong, wrong


def test_deep_bodies_of_the_transcript_the_library_and_live_events_are_4xx(diarizing_handler, tmp_path):
    from whisper_endpoint.serving.realtime import events
    from whisper_endpoint.serving.realtime.routes import _event
    from whisper_endpoint.speakers.library.settings import LibrarySettings

    deep = "[" * 5000
    with pytest.raises(events.EventError, match="nested more than"):
        _event({"text": deep}, 10**6)
    app = create_app(ServerSettings(), handler=diarizing_handler, job_settings=JobSettings(enabled=False),
                     library_settings=LibrarySettings(db=tmp_path / "speakers.sqlite"))
    with live_server(app) as running:
        for path in ("/formats/txt", "/v1/speakers"):
            response = requests.post(running.url + path, data=deep, timeout=30,
                                     headers={"Content-Type": "application/json"})
            assert 400 <= response.status_code < 500 and "nested more than" in response.text, (path, response.text)


def test_a_live_event_with_an_integer_no_float_holds_is_an_error_event():
    from whisper_endpoint.serving.realtime import events
    from whisper_endpoint.serving.realtime.routes import _event

    with pytest.raises(events.EventError, match="not JSON"):
        _event({"text": '{"type": "session.update", "n": 1' + "0" * 5000 + "}"}, 10**6)
