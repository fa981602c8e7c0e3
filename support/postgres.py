"""A real PostgreSQL for the tests and the benchmark: a cluster made with ``initdb`` in a temporary
folder, started on a free loopback port (its socket in the same folder), stopped and removed at the
end. Debian's ``postgresql`` package provides the programs (scripts/setup.sh installs it); run as
root, the server runs as the ``postgres`` user, as PostgreSQL requires.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from support.serving import free_port

MISSING = ("PostgreSQL's initdb and pg_ctl were not found (PATH, /usr/lib/postgresql/*/bin): "
           "run scripts/setup.sh, which installs Debian's postgresql package")


def _programs() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


class Postgres:
    def __init__(self, *, durable: bool = True):
        self.bin = _programs()
        if self.bin is None:
            raise RuntimeError(MISSING)
        self.durable = durable  # fsync on (as in production); off only where a test needs no durability
        self.folder = Path(tempfile.mkdtemp(prefix="whisper-endpoint-pg-"))
        self.port = free_port()
        self._databases = itertools.count()
        self._as = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _pg(self, program: str, *args: str) -> None:
        subprocess.run([*self._as, str(self.bin / program), *args], check=True, capture_output=True, timeout=120)

    def start(self) -> "Postgres":
        data = self.folder / "data"
        self._pg("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=50"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off"
        self._pg("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.folder / "server.log"), "-w", "start")
        return self

    def stop(self) -> None:
        try:
            self._pg("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database: its URL."""
        import psycopg

        name = f"jobs_{next(self._databases)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)
