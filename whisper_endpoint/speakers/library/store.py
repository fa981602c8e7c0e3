"""The speaker library in one SQLite file: named voices, and the per-speaker voices of finished jobs.

An entry keeps one unit embedding per enrolment clip (its voiceprint is their normalised mean, as for
``known_speakers``) and the library records the embedding model they came from: a file made with
another model is refused when opened, since its vectors would be compared with incomparable ones.
Every change is one SQLite transaction, so a crash mid-write leaves the entry as it was before it.
``SPEAKERS_DIR``'s voices are read-only entries held in memory (the folder stays their source), the same for
every tenant. Every other entry is its tenant's (core/tenants.py): another tenant is told it does not exist,
and names are unique within a tenant. A library from before tenants is migrated when opened: its entries
become the default tenant's.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from whisper_endpoint.core.errors import ClientError, ModelLoadError
from whisper_endpoint.core.tenants import ANYONE, DEFAULT, Tenant

MAX_CLIPS = 10  # clips one entry gathers over its POST /v1/speakers/{id}/audio calls
_SCHEMA = """
CREATE TABLE IF NOT EXISTS library (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS speakers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, embeddings TEXT NOT NULL, created_at INTEGER NOT NULL,
    tenant TEXT NOT NULL DEFAULT 'default', UNIQUE (tenant, name));
CREATE TABLE IF NOT EXISTS job_voices (
    job_id TEXT NOT NULL, speaker TEXT NOT NULL, embedding TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, speaker));
"""


class LibraryError(ClientError):
    """A library change that cannot be made as asked (409: a name taken, a read-only entry, the library full)."""

    status = 409
    code = "speaker_conflict"


class SpeakerNotFoundError(ClientError):
    status = 404
    code = "speaker_not_found"


@dataclass(frozen=True)
class Speaker:
    id: str
    name: str
    embeddings: tuple  # unit vectors, one per clip (SPEAKERS_DIR's: one, its voiceprint)
    created_at: int
    embedding_model: str
    read_only: bool = False
    tenant: str = DEFAULT

    @property
    def voiceprint(self) -> np.ndarray:
        return _unit(np.mean(np.asarray(self.embeddings, dtype=np.float64), axis=0))

    def public(self) -> dict:
        body = {"id": self.id, "name": self.name, "clips": len(self.embeddings),
                "embedding_model": self.embedding_model, "created_at": self.created_at}
        if self.read_only:
            body["read_only"] = True  # from SPEAKERS_DIR: change the folder, not the entry
        return body


class VoiceLibrary:
    """Thread-safe (one connection behind a lock; the routes call it from worker threads)."""

    def __init__(self, path: Path, embedding_model: str, *, max_speakers: int,
                 seeds: dict[str, np.ndarray] | None = None):
        self.path, self.embedding_model, self.max_speakers = Path(path), embedding_model, max_speakers
        self._lock = threading.Lock()
        self._prints: dict[str, dict[str, np.ndarray]] = {}  # tenant -> name -> voiceprint
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a committed entry survives a power cut too
            self._db.executescript(_SCHEMA)
            self._add_tenants()
            self._claim_model()
        except sqlite3.Error as exc:
            raise ModelLoadError(f"SPEAKERS_DB={self.path} cannot be opened: {exc}") from exc
        created = int(time.time())
        self._seeds = {name: Speaker(_seed_id(name), name, (tuple(_unit(vector)),), created, embedding_model, True)
                       for name, vector in (seeds or {}).items()}

    def _claim_model(self) -> None:
        row = self._db.execute("SELECT value FROM library WHERE key = 'embedding_model'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO library VALUES ('embedding_model', ?)", (self.embedding_model,))
        elif row[0] != self.embedding_model:
            raise ModelLoadError(
                f"SPEAKERS_DB={self.path} holds voices embedded with {row[0]!r}, but this server's diarizer embeds "
                f"with {self.embedding_model!r}: their vectors cannot be compared. Set SPEAKERS_DB to another file "
                "(and enrol the voices again), or run the diarizer the library was made with")

    def _add_tenants(self) -> None:
        """A library from before tenants (``name`` unique over all): its entries become the default tenant's."""
        if self._has_tenants():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if self._has_tenants():  # another process migrated it meanwhile
                self._db.execute("ROLLBACK")
                return
            self._db.execute("ALTER TABLE speakers RENAME TO speakers_before_tenants")
            self._db.execute(_SCHEMA.split(";")[1])  # the table as it is now
            self._db.execute("INSERT INTO speakers (id, name, embeddings, created_at, tenant) "
                             "SELECT id, name, embeddings, created_at, ? FROM speakers_before_tenants", (DEFAULT,))
            self._db.execute("DROP TABLE speakers_before_tenants")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _has_tenants(self) -> bool:
        return "tenant" in [row[1] for row in self._db.execute("PRAGMA table_info(speakers)")]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- reading -------------------------------------------------------------------------------

    def speakers(self, tenant: Tenant = ANYONE) -> list[Speaker]:
        """The entries ``tenant`` sees: SPEAKERS_DIR's and its own (an administrator: every tenant's)."""
        where, params = _owned(tenant)
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM speakers{where} ORDER BY created_at, name",
                                    params).fetchall()
        return [*self._seeds.values(), *map(self._speaker, rows)]

    def get(self, speaker_id: str, tenant: Tenant = ANYONE) -> Speaker:
        seed = next((s for s in self._seeds.values() if s.id == speaker_id), None)
        if seed is not None:
            return seed
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM speakers WHERE id = ?", (speaker_id,)).fetchone()
        if row is None or not tenant.sees(row[4]):  # another tenant's: as if it did not exist
            raise SpeakerNotFoundError(f"no speaker {speaker_id!r} in the library: it never existed or was deleted")
        return self._speaker(row)

    def voiceprints(self, tenant: str = DEFAULT) -> dict[str, np.ndarray]:
        """name -> unit voiceprint of ``tenant``'s entries and SPEAKERS_DIR's, for matching (cached until the
        next change)."""
        prints = self._prints.get(tenant)
        if prints is None:
            cache = self._prints  # a change replaces it: prints read before a change never land in the new one
            seen = self.speakers(Tenant(tenant))
            prints = cache[tenant] = {speaker.name: speaker.voiceprint for speaker in seen}
        return prints

    # --- changing ------------------------------------------------------------------------------

    def add(self, name: str, embeddings: list[np.ndarray], tenant: str = DEFAULT) -> Speaker:
        """A new entry of ``tenant``'s (at most SPEAKERS_MAX a tenant, SPEAKERS_DIR's counted in)."""
        speaker_id, created = uuid.uuid4().hex, int(time.time())
        with self._lock, self._transaction():
            self._check_name_free(name, tenant)
            count = self._db.execute("SELECT COUNT(*) FROM speakers WHERE tenant = ?", (tenant,)).fetchone()[0]
            if count + len(self._seeds) >= self.max_speakers:
                raise LibraryError(f"the speaker library is full ({self.max_speakers} speakers, SPEAKERS_MAX); "
                                   "delete one first", code="speaker_library_full")
            self._db.execute("INSERT INTO speakers (id, name, embeddings, created_at, tenant) VALUES (?, ?, ?, ?, ?)",
                             (speaker_id, name, _dump(embeddings), created, tenant))
        return self.get(speaker_id, _ALL)  # checked above

    def rename(self, speaker_id: str, name: str, tenant: Tenant = ANYONE) -> Speaker:
        speaker = self._writable(speaker_id, tenant)
        if name != speaker.name:
            with self._lock, self._transaction():
                self._check_name_free(name, speaker.tenant)
                self._db.execute("UPDATE speakers SET name = ? WHERE id = ?", (name, speaker_id))
        return self.get(speaker_id, _ALL)  # checked above

    def add_clips(self, speaker_id: str, embeddings: list[np.ndarray], tenant: Tenant = ANYONE) -> Speaker:
        self._writable(speaker_id, tenant)
        with self._lock, self._transaction():
            row = self._db.execute("SELECT embeddings FROM speakers WHERE id = ?", (speaker_id,)).fetchone()
            if row is None:
                raise SpeakerNotFoundError(f"no speaker {speaker_id!r} in the library: it was just deleted")
            kept = json.loads(row[0])
            if len(kept) + len(embeddings) > MAX_CLIPS:
                raise LibraryError(f"a speaker holds at most {MAX_CLIPS} clips; this one has {len(kept)}",
                                   code="speaker_clips_full")
            self._db.execute("UPDATE speakers SET embeddings = ? WHERE id = ?",
                             (json.dumps(kept + json.loads(_dump(embeddings))), speaker_id))
        return self.get(speaker_id, _ALL)  # checked above

    def delete(self, speaker_id: str, tenant: Tenant = ANYONE) -> None:
        self._writable(speaker_id, tenant)
        with self._lock, self._transaction():
            self._db.execute("DELETE FROM speakers WHERE id = ?", (speaker_id,))

    # --- the voices of finished jobs -----------------------------------------------------------

    def keep_job_voices(self, job_id: str, voices: dict[str, np.ndarray], *, older_than_s: float) -> None:
        """Store a finished job's per-speaker centroids (its result's labels), forgetting those of jobs
        older than ``older_than_s`` (the jobs' TTL: their results are gone too)."""
        now = int(time.time())
        with self._lock, self._transaction(changes_voices=False):
            self._db.execute("DELETE FROM job_voices WHERE created_at < ?", (now - older_than_s,))
            self._db.executemany("INSERT OR REPLACE INTO job_voices VALUES (?, ?, ?, ?)", [
                (job_id, label, json.dumps([round(float(x), 7) for x in _unit(v)]), now) for label, v in voices.items()])

    def job_voice(self, job_id: str, speaker: str) -> np.ndarray | None:
        with self._lock:
            row = self._db.execute("SELECT embedding FROM job_voices WHERE job_id = ? AND speaker = ?",
                                   (job_id, speaker)).fetchone()
        return None if row is None else np.asarray(json.loads(row[0]), dtype=np.float64)

    def job_speakers(self, job_id: str) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT speaker FROM job_voices WHERE job_id = ? ORDER BY speaker", (job_id,))
            return [row[0] for row in rows.fetchall()]

    # --- helpers -------------------------------------------------------------------------------

    def _transaction(self, changes_voices: bool = True):
        return _Transaction(self, changes_voices)

    def _writable(self, speaker_id: str, tenant: Tenant) -> Speaker:
        speaker = self.get(speaker_id, tenant)
        if speaker.read_only:
            raise LibraryError(f"speaker {speaker.name!r} comes from SPEAKERS_DIR and is read-only: change its folder "
                               "and restart the server", code="speaker_read_only")
        return speaker

    def _check_name_free(self, name: str, tenant: str) -> None:
        taken = name in self._seeds or self._db.execute("SELECT 1 FROM speakers WHERE name = ? AND tenant = ?",
                                                        (name, tenant)).fetchone()
        if taken:
            raise LibraryError(f"the library already has a speaker named {name!r}; choose another name or add "
                               "clips to that one (POST /v1/speakers/{id}/audio)", code="speaker_name_taken")

    def _speaker(self, row) -> Speaker:
        speaker_id, name, embeddings, created, tenant = row
        return Speaker(speaker_id, name, tuple(tuple(e) for e in json.loads(embeddings)), created,
                       self.embedding_model, tenant=tenant)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any error; the voiceprint cache is dropped after a change."""

    def __init__(self, library: VoiceLibrary, changes_voices: bool):
        self.library, self.changes_voices = library, changes_voices

    def __enter__(self):
        self.library._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, value, traceback):
        self.library._db.execute("ROLLBACK" if kind else "COMMIT")
        if self.changes_voices and kind is None:
            self.library._prints = {}
        return False


_COLUMNS = "id, name, embeddings, created_at, tenant"
_ALL = Tenant("", admin=True)  # the library's own reading, after a change it checked


def _owned(tenant: Tenant) -> tuple[str, tuple]:
    """The WHERE clause (and its parameters) of the rows ``tenant`` sees."""
    return ("", ()) if tenant.only is None else (" WHERE tenant = ?", (tenant.only,))


def _seed_id(name: str) -> str:
    return "dir_" + hashlib.sha256(name.encode()).hexdigest()[:16]


def _dump(embeddings: list[np.ndarray]) -> str:
    return json.dumps([[round(float(x), 7) for x in _unit(vector)] for vector in embeddings])


def _unit(vector) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(vector)
    return vector / norm if np.isfinite(norm) and norm > 0 else vector
