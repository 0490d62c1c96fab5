"""PostgreSQL for the tests: one real server per test session (Debian's ``postgresql``, installed
by ``scripts/test.sh``), a database per test.

Import the fixtures into a ``conftest.py``::

    from testkit.postgres import pg_database, postgres  # noqa: F401  (fixtures)

``postgres`` is a started ``LocalPostgres``: a cluster made by ``initdb`` in a temporary
directory, listening on a free port of 127.0.0.1, with ``wal_level=logical`` for change data
capture; it is skipped, with the install command as the reason, where PostgreSQL is missing.
``pg_database`` gives each test a database of its own (its name), dropped afterwards.
As root, ``initdb`` and ``postgres`` refuse to run: they run as ``nobody``, owning the directory.
"""
from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest

INSTALL = "scripts/debian-deps.sh pg_ctlcluster=postgresql"
SUPERUSER = "postgres"
PASSWORD = "josefk-test"


class PostgresNotInstalled(RuntimeError):
    pass


def server_bin_dir() -> str:
    """The newest installed server's bin directory (Debian puts each major version apart)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[-3]))
    if not found:
        raise PostgresNotInstalled(f"PostgreSQL is not installed: {INSTALL}")
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalPostgres:
    """A throwaway cluster: ``start()``, ``url(db)``, ``dsn(db)``, ``create_database``,
    ``stop()``. Password authentication (scram) for every TCP connection, replication too."""

    def __init__(self, user: str = "nobody"):
        self.bin = server_bin_dir()
        self.host, self.port = "127.0.0.1", _free_port()
        self.user, self.password = SUPERUSER, PASSWORD
        self._os_user = pwd.getpwnam(user) if os.geteuid() == 0 else None
        self.dir = tempfile.mkdtemp(prefix="josefk-pg-")
        self.proc: subprocess.Popen | None = None

    def _run_as(self) -> dict:
        if self._os_user is None:
            return {}
        return {"user": self._os_user.pw_uid, "group": self._os_user.pw_gid}

    def start(self, timeout: float = 60) -> None:
        data = os.path.join(self.dir, "data")
        pwfile = os.path.join(self.dir, "pwfile")
        with open(pwfile, "w") as f:
            f.write(self.password + "\n")
        if self._os_user is not None:
            os.chown(self.dir, self._os_user.pw_uid, self._os_user.pw_gid)
            os.chown(pwfile, self._os_user.pw_uid, self._os_user.pw_gid)
        env = {**os.environ, "HOME": self.dir, "LC_ALL": "C"}
        init = subprocess.run([f"{self.bin}/initdb", "-D", data, "-U", self.user, "--pwfile",
                               pwfile, "--auth-host=scram-sha-256", "--auth-local=trust",
                               "-E", "UTF8", "--no-sync"], capture_output=True, text=True,
                              env=env, **self._run_as())
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr.strip()}")
        self.log = open(os.path.join(self.dir, "postgres.log"), "wb")
        settings = {"listen_addresses": self.host, "port": self.port,
                    "unix_socket_directories": "", "wal_level": "logical",
                    "max_replication_slots": 20, "max_wal_senders": 20,
                    "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        args = [f"{self.bin}/postgres", "-D", data]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, **self._run_as())
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}: "
                                   f"see {self.dir}/postgres.log")
            try:
                psycopg.connect(self.dsn("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def dsn(self, database: str) -> str:
        return (f"host={self.host} port={self.port} dbname={database} user={self.user} "
                f"password={self.password}")

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            # a test's replication slots hold the database: end their readers, drop them
            deadline = time.monotonic() + 10
            while True:
                conn.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                             " WHERE database = %s AND active", (name,))
                try:
                    conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                                  "pg_replication_slots WHERE database = %s", (name,))
                    break
                except psycopg.errors.ObjectInUse:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self, timeout: float = 30) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: smart shutdown; the server is throwaway
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres():
    """One PostgreSQL server for the session, stopped at its end (also when tests failed)."""
    try:
        server = LocalPostgres()
    except PostgresNotInstalled as e:
        pytest.skip(str(e))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_database(postgres, request) -> str:
    """A new database for this test, named after it; dropped afterwards."""
    label = re.sub(r"[^a-z0-9_]+", "_", request.node.name.lower())[:40]
    name = postgres.create_database(f"t_{label}_{uuid.uuid4().hex[:6]}")
    yield name
    postgres.drop_database(name)
