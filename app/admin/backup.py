"""Online backups and verified restores of either database, and the lock that tells a
restore whether the app is running.

SQLite: the backup API copies the live file. PostgreSQL: pg_dump and pg_restore
(app/admin/pg_backup.py). A backup is one file either way; which kind it is, its first bytes
say, so `check` and `restore` need not be told.
"""

from __future__ import annotations

import fcntl
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from sqlalchemy import Connection
from sqlalchemy.engine import make_url

from app.admin import pg_backup
from app.admin.errors import BackupError
from app.config import database_kind

LOCK_NAME = "app.lock"
SQLITE_MAGIC = b"SQLite format 3\x00"


class AppLock:
    """What the running app holds until it stops: a shared flock on data_dir/app.lock (seen
    on this host), and on PostgreSQL a shared advisory lock (seen from every host).

    Shared, so overlapping app processes (a restart, several workers) never block each other;
    a restore asks for them exclusively and so fails while any app holds them.
    """

    def __init__(self, file: IO[str], connection: Connection | None) -> None:
        self._file = file
        self._connection = connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection.engine.dispose()
        self._file.close()


def app_lock(data_dir: Path, database_url: str) -> AppLock:
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = (data_dir / LOCK_NAME).open("a")
    fcntl.flock(handle, fcntl.LOCK_SH)
    if database_kind(database_url) == "sqlite":
        return AppLock(handle, None)
    try:
        return AppLock(handle, pg_backup.app_connection(database_url))
    except BaseException:
        handle.close()
        raise


def _sqlite_file(url: str) -> Path:
    return Path(make_url(url).database or "")


def sqlite_problem(path: Path) -> str | None:
    """None when SQLite's integrity_check passes and the file has ShardLab's tables."""
    if not path.is_file():
        return f"{path} does not exist"
    try:
        # Read-only, so checking a file never creates or changes it.
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if result != ["ok"]:
                return f"{path} fails SQLite's integrity check: {'; '.join(result[:5])}"
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as exc:
        return f"{path} is not a readable SQLite database: {exc}"
    missing = {"alembic_version", "user"} - tables
    if missing:
        return f"{path} is not a ShardLab database (no {', '.join(sorted(missing))} table)"
    return None


def _is_postgres_archive(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(len(pg_backup.ARCHIVE_MAGIC)) == pg_backup.ARCHIVE_MAGIC


def integrity_problem(path: Path) -> str | None:
    """None when a backup file (or a SQLite database) passes its check: SQLite's integrity
    check, or a PostgreSQL archive read to its end; either must hold ShardLab's tables."""
    if path.is_file() and _is_postgres_archive(path):
        return pg_backup.archive_problem(path)
    return sqlite_problem(path)


def database_problem(database_url: str) -> str | None:
    """integrity_problem for the live database."""
    if database_kind(database_url) == "sqlite":
        return sqlite_problem(_sqlite_file(database_url))
    return pg_backup.database_problem(database_url)


def default_backup_path(data_dir: Path, database_url: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    suffix = ".db" if database_kind(database_url) == "sqlite" else ".dump"
    return data_dir / "backups" / f"shardlab-{stamp}{suffix}"


def backup_database(database_url: str, destination: Path) -> Path:
    """Copies the live database to `destination` while the app keeps writing, then checks it."""
    if destination.exists():
        raise BackupError(f"{destination} exists already; pick a new name")
    if database_kind(database_url) == "sqlite":
        database = _sqlite_file(database_url)
        if not database.is_file():
            raise BackupError(f"no database at {database}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        _sqlite_backup(database, destination)
    else:
        destination.parent.mkdir(parents=True, exist_ok=True)
        pg_backup.dump(database_url, destination)
    problem = integrity_problem(destination)
    if problem:
        raise BackupError(f"the backup failed its check: {problem}")
    return destination


def _sqlite_backup(database: Path, destination: Path) -> None:
    """One step of the backup API (pages=-1) copies every page inside one read transaction:
    in WAL mode that is a consistent snapshot and never blocks the app's writers."""
    source = sqlite3.connect(database)
    target = sqlite3.connect(destination)
    try:
        source.execute("PRAGMA busy_timeout=5000")
        source.backup(target, pages=-1)
        # A backup is one self-contained file: no -wal beside it.
        target.execute("PRAGMA journal_mode=DELETE")
    finally:
        target.close()
        source.close()


def restore_database(backup: Path, database_url: str, data_dir: Path) -> None:
    """Replaces the database with a checked backup; refuses while the app is running."""
    problem = integrity_problem(backup)
    if problem:
        raise BackupError(problem)
    backup_kind = "postgresql" if _is_postgres_archive(backup) else "sqlite"
    if backup_kind != database_kind(database_url):
        raise BackupError(
            f"{backup} is a {backup_kind} backup and the database is "
            f"{database_kind(database_url)}: restore it into the kind it came from"
        )
    if backup_kind == "postgresql":
        pg_backup.restore(backup, database_url)
        problem = pg_backup.database_problem(database_url)
        if problem:
            raise BackupError(f"the restored database failed its check: {problem}")
        return
    database = _sqlite_file(database_url)
    # A new machine or a newly mounted volume: the directory may not exist yet.
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / LOCK_NAME).open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BackupError(
                "the app is running on this data directory: stop it first "
                "(docker compose stop app), restore, then start it again"
            ) from None
        database.parent.mkdir(parents=True, exist_ok=True)
        source = sqlite3.connect(f"file:{backup}?mode=ro", uri=True)
        target = sqlite3.connect(database)
        try:
            # The backup API writes through SQLite, so the target's -wal and -shm stay
            # consistent with the restored pages (copying the file over them would not).
            source.backup(target, pages=-1)
            target.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            target.close()
            source.close()
    problem = sqlite_problem(database)
    if problem:
        raise BackupError(f"the restored database failed its check: {problem}")
