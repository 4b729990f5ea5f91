"""Backups of a PostgreSQL database with its own tools, and the lock that tells a restore
whether any web process still uses the database, on this host or another.

pg_dump --format=custom writes one file from one consistent snapshot without blocking the
app's writes; pg_restore reads it back. Both come with Debian's postgresql-client, which must
be the server's major version or newer.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from app.admin.errors import BackupError
from app.db import APPLICATION_NAME

# Every web process holds this advisory lock shared while it runs; a restore takes it
# exclusively, so it is refused while any process holds it, and a process starting during a
# restore waits for it to finish. Any bigint, the same everywhere: the bytes of "SHRL".
APP_LOCK_KEY = 0x5348524C
# A custom-format archive begins with these bytes (pg_backup_archiver.c).
ARCHIVE_MAGIC = b"PGDMP"
# pg_restore --list: "215; 1259 16386 TABLE public user shardlab" (id; oids type schema name
# owner); TABLE DATA lines name the same tables.
TABLE_LINE = re.compile(r"^\d+; \d+ \d+ TABLE (\S+) (\S+) ", re.M)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError(
            f"{name} is missing: install PostgreSQL's client programs where this runs "
            "(Debian: apt-get install postgresql-client), the server's major version or newer"
        )
    return path


def _libpq(url: str, purpose: str) -> tuple[str, dict[str, str]]:
    """The URL as libpq's programs take it (--dbname) and their environment: the password
    goes in PGPASSWORD, never on a command line that `ps` shows."""
    parsed = make_url(url)
    env = {**os.environ, "PGAPPNAME": f"{APPLICATION_NAME}-{purpose}"}
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)
    plain = parsed.set(drivername="postgresql", password=None)
    return plain.render_as_string(hide_password=False), env


def _run(command: list[str], env: dict[str, str], what: str, **kwargs: object) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise BackupError(f"{what} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def archive_tables(path: Path) -> set[str]:
    """The tables a custom-format archive holds; BackupError unless it reads to its end."""
    if not path.is_file():
        raise BackupError(f"{path} does not exist")
    with path.open("rb") as file:
        if file.read(len(ARCHIVE_MAGIC)) != ARCHIVE_MAGIC:
            raise BackupError(f"{path} is not a PostgreSQL backup (pg_dump --format=custom)")
    env = dict(os.environ)
    listing = _run([_tool("pg_restore"), "--list", str(path)], env, f"reading {path}")
    # The list reads only the table of contents; writing the whole script to nowhere reads
    # and decompresses every row, so a cut-off or damaged file is found here, not mid-restore.
    _run([_tool("pg_restore"), "--file", os.devnull, str(path)], env, f"reading {path}")
    return {name for _schema, name in TABLE_LINE.findall(listing)}


def archive_problem(path: Path) -> str | None:
    """None when the archive reads to its end and holds ShardLab's tables."""
    try:
        tables = archive_tables(path)
    except BackupError as exc:
        return str(exc)
    missing = {"alembic_version", "user"} - tables
    if missing:
        return f"{path} is not a ShardLab backup (no {', '.join(sorted(missing))} table)"
    return None


def database_problem(url: str) -> str | None:
    """None when the database answers, has ShardLab's tables and reads every row of them:
    PostgreSQL checks each page it reads (and its checksum, where the cluster has them)."""
    engine = create_engine(
        url, poolclass=NullPool, connect_args={"application_name": f"{APPLICATION_NAME}-check"}
    )
    try:
        with engine.connect() as conn:
            tables = _tables(conn)
            missing = {"alembic_version", "user"} - set(tables)
            if missing:
                return f"not a ShardLab database (no {', '.join(sorted(missing))} table)"
            for table in tables:
                conn.execute(text(f'SELECT count(*) FROM "{table}"'))
    except SQLAlchemyError as exc:
        return f"the database fails its check: {exc}"
    finally:
        engine.dispose()
    return None


def _tables(conn: Connection) -> list[str]:
    rows = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"))
    return sorted(row[0] for row in rows)


def dump(url: str, destination: Path) -> None:
    """pg_dump into `destination`: one consistent snapshot, the app writing on meanwhile."""
    dbname, env = _libpq(url, "backup")
    # --no-owner and --no-acl at restore time instead: the archive keeps everything.
    command = [_tool("pg_dump"), "--format=custom", "--file", str(destination), "--dbname", dbname]
    _run(command, env, "pg_dump")


def app_connection(url: str) -> Connection:
    """The running app's hold on the database: a connection with APP_LOCK_KEY shared, kept
    open until the app stops. Waits while a restore holds the lock."""
    engine = create_engine(
        url, poolclass=NullPool, connect_args={"application_name": APPLICATION_NAME}
    )
    conn = engine.connect()
    conn.execute(text("SELECT pg_advisory_lock_shared(:key)"), {"key": APP_LOCK_KEY})
    conn.commit()  # the lock is the session's: it outlives the transaction
    return conn


def restore(backup: Path, url: str) -> None:
    """Replaces the database's tables with the archive's, in one transaction; refuses while
    any ShardLab process is connected or holds the app lock."""
    problem = archive_problem(backup)
    if problem:
        raise BackupError(problem)
    restored_tables = archive_tables(backup)
    engine = create_engine(
        url, poolclass=NullPool, connect_args={"application_name": f"{APPLICATION_NAME}-restore"}
    )
    try:
        with engine.connect() as lock:
            _refuse_while_the_app_runs(lock)
            # Tables the backup does not have (a newer version's) go too, or their foreign
            # keys would stop --clean dropping the tables they point at, and the migrations
            # would meet them again when they bring the restored schema up to date.
            extra = [t for t in _tables(lock) if t not in restored_tables]
            lock.commit()
            _restore_in_one_transaction(backup, url, extra)
    finally:
        engine.dispose()


def _refuse_while_the_app_runs(conn: Connection) -> None:
    held = conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": APP_LOCK_KEY})
    # Connections of a process that started before this lock existed, or the admin CLI.
    others = conn.execute(
        text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = :name AND pid <> pg_backend_pid()"
        ),
        {"name": APPLICATION_NAME},
    ).scalar_one()
    if not held.scalar_one() or others:
        raise BackupError(
            "the app is running on this database: stop every web process first "
            "(docker compose stop app), restore, then start them again"
        )


def _restore_in_one_transaction(backup: Path, url: str, extra_tables: list[str]) -> None:
    """pg_restore --clean --if-exists writes the SQL that drops and recreates every table
    of the archive; psql runs it after dropping `extra_tables`, all in one transaction, so a
    restore that fails midway leaves the database as it was."""
    dbname, env = _libpq(url, "restore")
    script = subprocess.Popen(
        [_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--no-acl",
         "--file", "-", str(backup)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert script.stdout is not None
    drop = "DROP TABLE IF EXISTS " + ", ".join(f'"{t}"' for t in extra_tables) + " CASCADE;"
    psql = [_tool("psql"), "--no-psqlrc", "--quiet", "--single-transaction",
            "--set", "ON_ERROR_STOP=1", "--dbname", dbname]  # fmt: skip
    if extra_tables:
        psql += ["--command", drop]
    try:
        _run([*psql, "--file", "-"], env, "restoring with psql", stdin=script.stdout)
    finally:
        script.stdout.close()
        errors = script.stderr.read().decode() if script.stderr else ""
        if script.wait() != 0:
            raise BackupError(f"pg_restore failed: {errors.strip()[-2000:]}")
