"""Online backups with SQLite's backup API, verified restores, and the lock that tells a
restore whether the app is running on the same data directory."""

from __future__ import annotations

import fcntl
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

LOCK_NAME = "app.lock"


class BackupError(Exception):
    """Something a person can fix: a bad file, a running app, a missing database."""


def app_lock(data_dir: Path) -> IO[str]:
    """A shared lock the running app holds on data_dir/app.lock until it closes the file.

    Shared, so overlapping app processes (a restart) never block each other; a restore asks
    for it exclusively and so fails while any app holds it.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = (data_dir / LOCK_NAME).open("a")
    fcntl.flock(handle, fcntl.LOCK_SH)
    return handle


def integrity_problem(path: Path) -> str | None:
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


def default_backup_path(data_dir: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return data_dir / "backups" / f"shardlab-{stamp}.db"


def backup_database(database: Path, destination: Path) -> Path:
    """Copies the live database to `destination` while the app keeps writing, then checks it.

    One step of the backup API (pages=-1) copies every page inside one read transaction:
    in WAL mode that is a consistent snapshot and never blocks the app's writers.
    """
    if not database.is_file():
        raise BackupError(f"no database at {database}")
    if destination.exists():
        raise BackupError(f"{destination} exists already; pick a new name")
    destination.parent.mkdir(parents=True, exist_ok=True)
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
    problem = integrity_problem(destination)
    if problem:
        raise BackupError(f"the backup failed its check: {problem}")
    return destination


def restore_database(backup: Path, database: Path, data_dir: Path) -> None:
    """Replaces the database with a checked backup; refuses while the app is running."""
    problem = integrity_problem(backup)
    if problem:
        raise BackupError(problem)
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
    problem = integrity_problem(database)
    if problem:
        raise BackupError(f"the restored database failed its check: {problem}")
