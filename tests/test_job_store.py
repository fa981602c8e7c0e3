"""The job store's rules, the same tests on both implementations: SQLite (a file) and PostgreSQL (a
real cluster, tests/postgres_server.py). Leases, recovery, finishing once, concurrent claims and
schema migration; and the JOBS_DB values the server refuses to start with."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from support.paths import ROOT
from support.serving import free_port
from whisper_endpoint.jobs import JobSettings, open_store, schema
from whisper_endpoint.jobs.settings import StoreUrlError


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path):
    """A fresh database of each kind: what ``open_store`` takes."""
    if request.param == "sqlite":
        return tmp_path / "jobs.sqlite"
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture
def store(db):
    opened = open_store(db)
    yield opened
    opened.close()


def test_store_expires_finished_jobs_and_gives_up_on_jobs_interrupted_too_often(store):
    for name in ("done", "crashy", "waiting"):
        store.add(name, "audio/flac", {}, f"/x/{name}", None)
    assert store.claim_next("a", 30).id == "done"
    assert store.succeed("done", {"text": "x"}, "a")
    finished_at = store.get("done").finished_at
    assert store.expire(ttl_s=60, now=finished_at + 30) == []
    assert [job.id for job in store.expire(ttl_s=60, now=finished_at + 61)] == ["done"]
    assert store.get("done") is None
    assert store.claim_next("a", 30).id == "crashy"  # claimed, then the process dies
    assert store.recover(max_attempts=2, everyone=True) == (1, [])
    assert store.claim_next("a", 30).id == "crashy"  # and dies again
    requeued, failed = store.recover(max_attempts=2, everyone=True)
    assert requeued == 0 and [job.id for job in failed] == ["crashy"]
    assert store.get("crashy").error["code"] == "interrupted"
    assert store.get("waiting").status == "queued"  # never touched by recovery


def test_a_lease_keeps_a_job_on_its_server_until_it_expires_and_only_its_holder_finishes_it(store):
    store.add("j", "audio/flac", {}, "/x/j", None)
    first = store.claim_next("a", lease_s=10)
    assert first.attempts == 1 and store.claim_next("b", 10) is None  # running: nobody else takes it
    assert store.recover(3, now=first.started_at + 5) == (0, [])  # the lease holds
    assert store.renew("a", ["j"], 20) == {"j"} and store.renew("b", ["j"], 20) == set()
    assert store.recover(3, now=first.started_at + 12) == (0, [])  # renewed for 20 s: it holds past the first 10
    assert store.recover(3, now=first.started_at + 30) == (1, [])  # a died: queued again
    second = store.claim_next("b", 10)
    assert (second.id, second.attempts) == ("j", 2)
    assert store.renew("a", ["j"], 10) == set()  # a (stalled, not dead) learns it lost the job
    assert not store.succeed("j", {"text": "late"}, "a") and not store.fail("j", {"error": "x"}, "a")
    store.requeue("j", "a")  # a's shutdown cannot take it back from b either
    assert store.get("j").status == "running"
    assert store.succeed("j", {"text": "b's"}, "b") and not store.succeed("j", {"text": "again"}, "b")
    assert store.get("j").result == {"text": "b's"}


def test_a_jobs_blocks_are_kept_for_its_lease_holder_and_go_with_the_job(store):
    """A long recording's finished blocks (whisper_endpoint/blocks/): kept only by the server holding the job,
    taken by whoever runs it next under the same key, gone once the job is finished or deleted."""
    for name in ("j", "k"):
        store.add(name, "audio/flac", {}, f"/x/{name}", None)
    assert store.claim_next("a", 10).id == "j"
    assert store.save_block("j", "a", 0, "key0", {"text": "first"})
    assert not store.save_block("j", "b", 1, "key1", {"text": "not b's"})  # b does not hold it
    assert not store.save_block("k", "a", 0, "key0", {"text": "queued"})  # not running
    assert store.save_block("j", "a", 0, "key0", {"text": "first, again"})  # a block decoded twice: kept once
    assert store.load_block("j", 0, "key0") == {"text": "first, again"}
    assert store.load_block("j", 0, "another plan") is None and store.load_block("j", 1, "key1") is None
    assert store.recover(3, now=time.time() + 60) == (1, [])  # a died: its block stays for the next server
    assert store.claim_next("b", 10).id == "j" and store.load_block("j", 0, "key0") == {"text": "first, again"}
    assert store.succeed("j", {"text": "done"}, "b")
    store.forget_blocks("j")
    assert store.load_block("j", 0, "key0") is None
    assert store.claim_next("b", 10).id == "k" and store.save_block("k", "b", 0, "key0", {"text": "k's"})
    store.delete("k")
    store.expire(ttl_s=60)  # the blocks of a job no longer queued or running go too
    assert store.load_block("k", 0, "key0") is None


def test_a_callback_is_owed_until_delivered_under_its_jobs_lease_whichever_server_delivers_it(store):
    """Issue 60: finishing keeps the lease for the delivery; a stopping server gives it back, a dead one's
    lapses; only the holder counts a failed attempt or records the outcome."""
    store.add("j", "audio/flac", {}, "/x/j", "https://hooks.example/done")
    store.add("quiet", "audio/flac", {}, "/x/q", None)
    store.add("crashy", "audio/flac", {}, "/x/c", "https://hooks.example/done")
    store.claim_next("a", 10)
    assert store.succeed("j", {"text": "x"}, "a")
    assert (store.get("j").callback_status, store.get("j").callback_attempts) == ("pending", 0)
    assert store.renew("a", ["j"], 10) == {"j"} and store.claim_callbacks("b", 10) == []  # a delivers it
    store.callback_failed("j", "a")
    store.callback_failed("j", "b")  # not b's to count
    store.release_callback("j", "a")  # a shuts down during its second attempt, which is not counted
    (taken,) = store.claim_callbacks("b", 10)
    assert (taken.id, taken.callback_attempts, taken.result) == ("j", 1, {"text": "x"})
    assert store.claim_callbacks("c", 10, now=time.time() + 5) == []
    assert [job.id for job in store.claim_callbacks("c", 10, now=time.time() + 11)] == ["j"]  # b died
    store.set_callback_status("j", "delivered", "b")  # b was only stalled: c's delivery decides
    assert store.get("j").callback_status == "pending"
    store.set_callback_status("j", "delivered", "c")
    assert store.get("j").callback_status == "delivered"
    store.claim_next("a", 10)
    assert store.succeed("quiet", {"text": "y"}, "a") and store.get("quiet").callback_status is None
    store.claim_next("a", 10)  # and the process dies, too often: the job fails, its callback is owed
    assert store.recover(max_attempts=1, everyone=True)[1][0].callback_status == "pending"
    assert [job.id for job in store.claim_callbacks("d", 10, everyone=True)] == ["crashy"]  # j is delivered


def test_a_database_from_before_callbacks_were_kept_owes_those_never_delivered(tmp_path):
    path = tmp_path / "v2.sqlite"
    old = sqlite3.connect(path)
    for statement in [text.format(real="REAL") for migration in schema.MIGRATIONS[:2] for text in migration]:
        old.execute(statement)
    old.execute(schema.VERSION_TABLE)
    old.execute("INSERT INTO schema_version (version) VALUES (2)")
    rows = [("cut", "succeeded", "https://h.example/x", None), ("done", "failed", "https://h.example/x", "delivered"),
            ("none", "succeeded", None, None), ("waiting", "queued", "https://h.example/x", None)]
    old.executemany("INSERT INTO jobs (id, status, media_type, parameters, input_path, callback_url, callback_status, "
                    "created_at) VALUES (?, ?, 'audio/flac', '{}', '/x', ?, ?, 1.0)", rows)
    old.commit()
    old.close()
    store = open_store(path)
    try:
        assert {job_id: store.get(job_id).callback_status for job_id, *_ in rows} == {
            "cut": "pending", "done": "delivered", "none": None, "waiting": None}
        assert [job.id for job in store.claim_callbacks("a", 10, everyone=True)] == ["cut"]
    finally:
        store.close()


def test_concurrent_claims_from_two_connections_take_every_job_once(db):
    stores = [open_store(db), open_store(db)]
    try:
        for n in range(40):
            stores[0].add(f"j{n:02d}", "audio/flac", {}, f"/x/{n}", None)

        def drain(index: int) -> list[str]:
            taken = []
            while (job := stores[index % 2].claim_next(f"worker{index}", 30)) is not None:
                taken.append(job.id)
            return taken

        with ThreadPoolExecutor(4) as pool:
            claims = [job for taken in pool.map(drain, range(4)) for job in taken]
    finally:
        for opened in stores:
            opened.close()
    assert sorted(claims) == [f"j{n:02d}" for n in range(40)]


def test_servers_starting_at_once_create_the_schema_once(db):
    barrier = threading.Barrier(4)

    def start(_):
        barrier.wait()
        opened = open_store(db)
        opened.close()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(start, range(4)))
    opened = open_store(db)
    try:
        rows, _ = opened._run("SELECT version FROM schema_version")
        assert rows == [{"version": schema.VERSION}]
    finally:
        opened.close()


def test_a_database_from_before_the_version_table_is_migrated_with_its_jobs(tmp_path):
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.executescript(schema.MIGRATIONS[0][0].format(real="REAL") + ";")
    old.execute("INSERT INTO jobs (id, status, media_type, parameters, input_path, created_at) "
                "VALUES ('old', 'queued', 'audio/flac', '{}', '/x/old', 1.0)")
    old.commit()
    old.close()
    store = open_store(path)
    try:
        assert store.claim_next("a", 30).id == "old" and store.renew("a", ["old"], 30) == {"old"}
    finally:
        store.close()


@pytest.mark.parametrize("url, says", [
    ("mysql://u:hunter2pass@db/jobs", "not mysql://"),
    ("postgresql://u:hunter2pass@db/jobs", "needs JOBS_UPLOAD_DIR"),
])
def test_a_database_url_the_store_cannot_serve_is_refused_naming_it(tmp_path, url, says):
    with pytest.raises(StoreUrlError, match=says) as refused:
        JobSettings(db=url)
    assert "JOBS_DB=" in str(refused.value) and "hunter2pass" not in str(refused.value)
    assert not (tmp_path / "mysql:").exists()


def test_a_server_with_such_a_url_does_not_start(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "PORT": str(free_port()), "HOST": "127.0.0.1", "JOBS_DB": "mysql://u:hunter2pass@db/jobs"}
    done = subprocess.run([sys.executable, "-m", "whisper_endpoint.serving"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "JOBS_DB=mysql://u:***@db/jobs" in output, output
    assert "hunter2pass" not in output and list(tmp_path.iterdir()) == []  # no folder made for it either


def test_a_postgresql_url_selects_postgresql(tmp_path):
    settings = JobSettings(db="postgresql://u@host/db", upload_dir=tmp_path)
    assert settings.db == "postgresql://u@host/db" and settings.uploads == tmp_path
