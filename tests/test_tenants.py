"""Each API key a tenant of its own (issue 74): two tenants reach none of each other's jobs, results or
voices, on every route and in every store, after a restart too; an administrator's key sees both; rows
from before tenants are the default tenant's.

Real voices as in test_speaker_library.py (tiny.en + the embedded diarizer on fillets_barrel, the clips
from fillets_long); one diarized job and two diarized requests.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3

import numpy as np
import pytest
import requests
from pydantic import ValidationError

from support.serving import live_server, wait_until
from tests.test_known_speakers import AUDIO, FISH_ASR, RATE, _b64, excerpt, fish  # noqa: F401 (fixtures)
from tests.test_live_speakers import _session
from whisper_endpoint.audio.decode import decode_file
from whisper_endpoint.core.tenants import DEFAULT, Tenant, of_key
from whisper_endpoint.jobs import JobSettings, open_store, schema
from whisper_endpoint.serving import auth
from whisper_endpoint.serving.app import create_app
from whisper_endpoint.serving.realtime.client_secrets import ClientSecrets, SecretRequest
from whisper_endpoint.serving.settings import ServerSettings
from whisper_endpoint.speakers.library import VoiceLibrary
from whisper_endpoint.speakers.library.settings import LibrarySettings

A, B, ADMIN = "tenant-a-key-0123456789", "tenant-b-key-0123456789", "the-admin-key-0123456789"
REQUEST = {**FISH_ASR, "return_speaker_turns": True}
CAVE = AUDIO / "dialogues" / "fillets_cave.flac"


def _as(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


# --- the rules, without a model ---------------------------------------------------------------------------

def test_keys_map_to_tenants_and_a_key_belongs_to_one():
    acme = {"acme": ["acme-key-one-0123456", "acme-key-two-012345"]}
    settings = ServerSettings(api_keys=f"{A},{B}", api_tenants=acme, api_admin_keys=ADMIN)
    keys = auth.APIKeys.from_settings(settings)
    assert keys.tenant_for(A) == Tenant(of_key(A)) != keys.tenant_for(B)
    assert keys.tenant_for("acme-key-one-0123456") == keys.tenant_for("acme-key-two-012345") == Tenant("acme")
    assert keys.tenant_for(ADMIN).admin and keys.tenant_for("nobody-key-0123456789") is None
    assert auth.APIKeys.from_settings(ServerSettings(api_keys=A)).tenant_for(A) == Tenant(DEFAULT)  # one key
    posing = auth.APIKeys.from_settings(ServerSettings(api_tenants={"admin": [A], of_key(B).replace(":", "-"): [B]},
                                                       api_admin_keys=ADMIN))
    assert not posing.tenant_for(A).admin and posing.tenant_for(A).id != posing.tenant_for(ADMIN).id
    assert posing.tenant_for(B).id != of_key(B)  # a group cannot take an ungrouped key's tenant
    with pytest.raises(ValidationError, match="a key belongs to one tenant"):
        ServerSettings(api_keys=A, api_admin_keys=A)
    with pytest.raises(ValidationError, match="tenant's name"):
        ServerSettings(api_tenants={"no spaces": [A]})


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path):
    if request.param == "sqlite":
        return tmp_path / "jobs.sqlite"
    return request.getfixturevalue("postgres").new_database()


def test_the_job_store_answers_a_tenant_for_its_own_jobs_only(db):
    store = open_store(db)
    try:
        store.add("a1", "audio/flac", {}, "/x/a1", None, "ta")
        store.add("b1", "audio/flac", {}, "/x/b1", None, "tb")
        assert store.get("a1", "ta").tenant == "ta" and store.get("a1", "tb") is None
        assert store.get("a1").id == "a1"  # no tenant: the server's own reading (an administrator's)
        assert store.delete("a1", "tb") is None and store.get("a1") is not None
        assert store.delete("a1", "ta").id == "a1"
    finally:
        store.close()


def test_jobs_from_before_tenants_are_the_default_tenants(tmp_path):
    path = tmp_path / "jobs.sqlite"
    old = sqlite3.connect(path)
    before = len(schema.MIGRATIONS) - 1
    for statement in [text.format(real="REAL") for migration in schema.MIGRATIONS[:before] for text in migration]:
        old.execute(statement)
    old.execute(schema.VERSION_TABLE)
    old.execute("INSERT INTO schema_version (version) VALUES (?)", (before,))
    old.execute("INSERT INTO jobs (id, status, media_type, parameters, input_path, created_at) "
                "VALUES ('old', 'succeeded', 'audio/flac', '{}', '/x', 1.0)")
    old.commit()
    old.close()
    store = open_store(path)
    try:
        assert store.get("old", DEFAULT).tenant == DEFAULT and store.get("old", of_key(A)) is None
    finally:
        store.close()


def test_a_library_from_before_tenants_is_the_default_tenants_and_names_are_per_tenant(tmp_path):
    path = tmp_path / "speakers.sqlite"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE library (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO library VALUES ('embedding_model', 'm');
        CREATE TABLE speakers (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, embeddings TEXT NOT NULL,
                               created_at INTEGER NOT NULL);
        INSERT INTO speakers VALUES ('s1', 'Ann', '[[1.0, 0.0]]', 1);
    """)
    old.commit()
    old.close()
    library = VoiceLibrary(path, "m", max_speakers=2)
    other = Tenant("tb")
    assert [s.name for s in library.speakers(Tenant(DEFAULT))] == ["Ann"] and library.speakers(other) == []
    assert set(library.voiceprints(DEFAULT)) == {"Ann"} and library.voiceprints("tb") == {}
    theirs = library.add("Ann", [np.array([0.0, 1.0])], "tb")  # the same name in another tenant
    assert set(library.voiceprints("tb")) == {"Ann"} and library.voiceprints("tb")["Ann"][1] == 1.0
    for change in (lambda: library.get("s1", other), lambda: library.rename("s1", "Bo", other),
                   lambda: library.delete("s1", other), lambda: library.add_clips("s1", [np.ones(2)], other)):
        with pytest.raises(Exception, match="no speaker 's1'"):
            change()
    library.add("Cy", [np.ones(2)], "tb")
    with pytest.raises(Exception, match="library is full"):  # SPEAKERS_MAX is each tenant's
        library.add("Di", [np.ones(2)], "tb")
    assert {s.id for s in library.speakers(Tenant("admin", admin=True))} >= {"s1", theirs.id}


def test_a_client_secret_opens_a_session_of_the_tenant_it_was_issued_to():
    secrets = ClientSecrets(60)
    value = secrets.issue(SecretRequest(), "ta")["value"]
    assert secrets.session_for(value)[1] == "ta" and secrets.session_for(value + "x") is None


# --- the attack, over HTTP with real voices ----------------------------------------------------------------

def _server(handler, folder):
    return live_server(create_app(
        ServerSettings(api_keys=f"{A},{B}", api_admin_keys=ADMIN), handler=handler,
        job_settings=JobSettings(db=folder / "jobs.sqlite", poll_s=0.1),
        library_settings=LibrarySettings(db=folder / "speakers.sqlite", max=4)))


def _named(url: str, key: str, audio: bytes) -> set[str]:
    response = requests.post(f"{url}/predict", headers=_as(key), timeout=120,
                             json={"inputs": base64.b64encode(audio).decode(), "parameters": REQUEST})
    assert response.status_code == 200, response.text
    return {m["name"] for m in response.json().get("speaker_matches", ())}


@pytest.mark.slow  # a diarized job, two diarized requests and two live sessions: about 30 s on a quiet machine
def test_two_tenants_reach_none_of_each_others_jobs_and_voices_across_a_restart(diarizing_handler, tmp_path,
                                                                                excerpt, fish):
    audio, _ = excerpt
    cave = decode_file(CAVE.read_bytes(), max_seconds=600).samples
    turns = [t for t in json.loads(CAVE.with_suffix(".json").read_text())["turns"] if t["speaker"] == "big_fish"][:2]
    with _server(diarizing_handler, tmp_path) as server:
        url = server.url
        made = requests.post(f"{url}/v1/speakers", headers=_as(A),
                             json={"name": "big_fish", "audio": [_b64(c) for c in fish["big_fish"]]})
        assert made.status_code == 201, made.text
        speaker = f"{url}/v1/speakers/{made.json()['id']}"
        job = requests.post(f"{url}/jobs", headers={**_as(A), "Content-Type": "audio/flac"}, data=audio,
                            params={**FISH_ASR, "speaker_library": "false"}).json()
        state = {}
        wait_until(lambda: state.update(requests.get(f"{url}/jobs/{job['id']}", headers=_as(A)).json())
                   or state["status"] in ("succeeded", "failed"), timeout=120, interval=0.1)
        assert state["status"] == "succeeded", state
        label = state["result"]["speakers"][0]["speaker"]

        # B: every route answers as if A's job and voice did not exist.
        clip = {"audio": [_b64(fish["big_fish"][0])]}
        for method, path, body in [("get", f"/jobs/{job['id']}", None), ("delete", f"/jobs/{job['id']}", None),
                                   ("get", speaker.removeprefix(url), None),
                                   ("patch", speaker.removeprefix(url), {"name": "renamed"}),
                                   ("post", speaker.removeprefix(url) + "/audio", clip),
                                   ("delete", speaker.removeprefix(url), None),
                                   ("post", "/v1/speakers", {"name": "stolen", "job_id": job["id"], "speaker": label})]:
            response = requests.request(method, url + path, headers=_as(B), json=body, timeout=60)
            assert response.status_code == 404, (method, path, response.status_code, response.text)
        assert requests.get(f"{url}/v1/speakers", headers=_as(B)).json()["data"] == []
        assert _named(url, B, audio) == set()  # A's voices do not name B's speakers
        assert _named(url, A, audio) == {"big_fish"}  # and they do name A's
        live = {key: asyncio.run(asyncio.wait_for(_session(url, cave, turns, key), 120)) for key in (B, A)}
        assert "big_fish" not in live[B] and live[A].count("big_fish") >= len(turns) - 1, live

        # The administrator sees both tenants.
        assert requests.get(f"{url}/jobs/{job['id']}", headers=_as(ADMIN)).status_code == 200
        seen = requests.get(f"{url}/v1/speakers", headers=_as(ADMIN)).json()["data"]
        assert [s["name"] for s in seen] == ["big_fish"]

    with _server(diarizing_handler, tmp_path) as server:  # a restart: the stores say whose rows they are
        assert requests.get(f"{server.url}/jobs/{job['id']}", headers=_as(B)).status_code == 404
        assert requests.get(f"{server.url}/jobs/{job['id']}", headers=_as(A)).json()["status"] == "succeeded"
        assert requests.get(f"{server.url}/v1/speakers", headers=_as(B)).json()["data"] == []
        assert requests.delete(f"{server.url}/jobs/{job['id']}", headers=_as(A)).status_code == 204
