"""A real PostgreSQL server for the tests: Debian's PostgreSQL, started once per test session.

With SHARDLAB_TEST_DATABASE=postgresql, tests/utils.make_settings gives each test's data
directory a database of its own on it, copied from a template migrated once
(`CREATE DATABASE ... TEMPLATE` takes tens of milliseconds; migrating from nothing takes
seconds). The tests of PostgreSQL itself (tests/test_postgres_*.py, tests/admin) ask for it in
either pass. Where it cannot start the tests that need it skip with the reason, except under CI
(the `CI` variable set), where they fail: CI must test PostgreSQL.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import URL

# Debian's layout: /usr/lib/postgresql/<major>/bin holds initdb and pg_ctl, off the PATH.
PG_ROOT = Path("/usr/lib/postgresql")
USER = "shardlab"
TEMPLATE = "shardlab_template"
# The server refuses to run as root; then it runs as Debian's postgres system user.
UNPRIVILEGED_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    """Why no PostgreSQL server could be started here."""


def pg_bin() -> Path:
    """The newest installed PostgreSQL's bin directory."""
    found = sorted(PG_ROOT.glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise PostgresUnavailable(
            f"no PostgreSQL server under {PG_ROOT} (Debian: apt-get install postgresql)"
        )
    return found[-1].parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One server on 127.0.0.1 in a temporary directory, a password for USER, and the
    databases the tests make on it."""

    def __init__(self) -> None:
        self.bin = pg_bin()
        self.root = Path(tempfile.mkdtemp(prefix="shardlab-pg-"))
        self.data = self.root / "data"
        self.sockets = self.root / "sockets"
        self.log = self.root / "server.log"
        self.password = secrets.token_urlsafe(16)
        self.port = 0
        self.run_as: list[str] = []
        self._by_data_dir: dict[Path, str] = {}
        self._made: list[str] = []
        self._names = itertools.count(1)

    def start(self) -> None:
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam(UNPRIVILEGED_USER)
            except KeyError:
                raise PostgresUnavailable(
                    f"running as root and there is no {UNPRIVILEGED_USER!r} user to run "
                    "PostgreSQL as (Debian's postgresql package makes it)"
                ) from None
            if shutil.which("runuser") is None:
                raise PostgresUnavailable("running as root and runuser is missing")
            self.run_as = ["runuser", "-u", UNPRIVILEGED_USER, "--"]
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        if self.run_as:
            os.chown(password_file, owner.pw_uid, owner.pw_gid)
        self._run(
            "initdb", "--pgdata", self.data, "--username", USER, "--pwfile", password_file,
            "--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8",
            "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        password_file.unlink()
        self._run_as_owner(["mkdir", "-m", "700", str(self.sockets)])
        self.port = _free_port()
        options = " ".join([
            "-c listen_addresses=127.0.0.1", f"-p {self.port}", f"-k {self.sockets}",
            # Throwaway data: nothing needs to survive a crash, and syncing is most of the
            # time a CREATE DATABASE takes.
            "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
            # Each test's app keeps a pool; a browser test's server and its helpers add more.
            "-c max_connections=300",
        ])  # fmt: skip
        self._run("pg_ctl", "--pgdata", self.data, "--log", self.log, "--wait",
                  "--timeout=60", "--options", options, "start")  # fmt: skip
        self._create(TEMPLATE, "template0")
        # Imported here: the app's modules are what is under test, not this fixture's.
        from app.db import migrate

        migrate(self.url(TEMPLATE))

    def stop(self) -> None:
        if self.data.exists():
            # immediate: nothing here is worth a clean shutdown's checkpoint.
            subprocess.run(
                [*self.run_as, str(self.bin / "pg_ctl"), "--pgdata", str(self.data),
                 "--mode=immediate", "--wait", "stop"],
                capture_output=True, check=False,
            )  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        return URL.create(
            "postgresql+psycopg",
            username=USER,
            password=self.password,
            host="127.0.0.1",
            port=self.port,
            database=database,
        ).render_as_string(hide_password=False)

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        """An autocommit connection as the superuser, for the tests' own statements."""
        return psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=USER,
            password=self.password,
            dbname=database,
            autocommit=True,
        )

    def create_database(self, template: str = TEMPLATE) -> str:
        """A new database copied from `template` (TEMPLATE: migrated to head; template0:
        empty), dropped with the test that made it; its name."""
        name = f"test_{next(self._names)}"
        self._create(name, template)
        self._made.append(name)
        return name

    def _create(self, name: str, template: str) -> None:
        with self.connect() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')

    def drop_database(self, name: str) -> None:
        with self.connect() as conn:
            # FORCE ends the connections a test's engines still pool.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def database_for(self, data_dir: Path) -> str:
        """The URL of `data_dir`'s database: a new one the first time, the same one after
        (an app restarted on the same data directory finds its data)."""
        if data_dir not in self._by_data_dir:
            self._by_data_dir[data_dir] = self.url(self.create_database())
        return self._by_data_dir[data_dir]

    def made_count(self) -> int:
        return len(self._made)

    def drop_made_since(self, count: int) -> None:
        """Drops the databases made after made_count() returned `count`: a test's own."""
        for name in self._made[count:]:
            self.drop_database(name)
        dropped = set(self._made[count:])
        del self._made[count:]
        self._by_data_dir = {d: u for d, u in self._by_data_dir.items()
                             if u.rsplit("/", 1)[1] not in dropped}  # fmt: skip

    def _run(self, program: str, *args: object) -> None:
        self._run_as_owner([str(self.bin / program), *map(str, args)])

    def _run_as_owner(self, command: list[str]) -> None:
        done = subprocess.run(
            [*self.run_as, *command], capture_output=True, text=True, cwd=self.root
        )
        if done.returncode != 0:
            log = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise PostgresUnavailable(
                f"{Path(command[0]).name} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-2000:]}\n{log}"
            )


_server: PostgresServer | None = None
_failure: str | None = None


def shared_server() -> PostgresServer:
    """The session's server, started by the first test that needs it; PostgresUnavailable
    (every time, without trying again) where it cannot start."""
    global _server, _failure
    if _failure is not None:
        raise PostgresUnavailable(_failure)
    if _server is None:
        server = PostgresServer()
        try:
            server.start()
        except (PostgresUnavailable, OSError, psycopg.Error) as exc:
            server.stop()
            _failure = str(exc)
            raise PostgresUnavailable(_failure) from exc
        _server = server
        # The conftest stops it at the session's end; this covers a run that is cut short.
        atexit.register(server.stop)
    return _server


def require_server() -> PostgresServer:
    """shared_server() for a test: skipped where PostgreSQL cannot start, failed under CI."""
    try:
        return shared_server()
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL must run in CI: {exc}", pytrace=False)
        pytest.skip(f"no PostgreSQL server: {exc}")


def stop_shared_server() -> None:
    global _server
    if _server is not None:
        _server.stop()
        _server = None


def running_server() -> PostgresServer | None:
    return _server
