"""Backups and restores on a real PostgreSQL server, in either pass: pg_dump while rows
arrive, a restore that refuses while any ShardLab process is connected, an older backup
restored under a newer schema, and damaged, foreign or misplaced files refused by name."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from app.admin import pg_backup
from app.admin.__main__ import main
from app.admin.backup import app_lock, backup_database
from app.db import alembic_config, make_engine, migrate
from tests.pg_server import PostgresServer


@pytest.fixture
def url(postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A migrated database of the test's own, which the CLI finds in the environment."""
    url = postgres.database_for(tmp_path / "data")
    monkeypatch.setenv("SHARDLAB_DATABASE_URL", url)
    return url


def _cli(tmp_path: Path, *args: str) -> int:
    return main(["--data-dir", str(tmp_path / "data"), *args])


def _usernames(url: str) -> list[str]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        names = conn.execute(text('SELECT username FROM "user" ORDER BY id')).scalars().all()
    engine.dispose()
    return list(names)


def _add_user(url: str, name: str) -> None:
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        conn.execute(
            text(
                'INSERT INTO "user" (username, password_hash, created_at, is_admin, disabled) '
                "VALUES (:name, 'x', now(), false, false)"
            ),
            {"name": name},
        )
    engine.dispose()


def test_backups_taken_while_rows_arrive_are_snapshots(url: str, tmp_path: Path) -> None:
    stop, written = threading.Event(), []

    def write() -> None:
        while not stop.is_set():
            _add_user(url, f"user{len(written)}")
            written.append(1)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(written) < 20:
            time.sleep(0.01)
        backups = [tmp_path / f"b{i}.dump" for i in range(3)]
        for path in backups:
            assert _cli(tmp_path, "backup", str(path)) == 0
    finally:
        stop.set()
        writer.join()
    counts = []
    for path in backups:
        assert path.read_bytes().startswith(b"PGDMP")
        assert _cli(tmp_path, "check", str(path)) == 0
        assert _cli(tmp_path, "restore", str(path), "--yes") == 0
        names = _usernames(url)
        # Each a snapshot: the first n users in order, none missing between them.
        assert names == [f"user{i}" for i in range(len(names))]
        counts.append(len(names))
    assert counts == sorted(counts) and counts[0] >= 20


def test_the_default_backup_goes_to_the_data_dir_as_a_dump(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(tmp_path, "backup") == 0
    (made,) = (tmp_path / "data" / "backups").glob("shardlab-*.dump")
    assert f"backed up to {made}" in capsys.readouterr().out
    assert _cli(tmp_path, "check") == 0  # the live database, read through
    assert "integrity check ok" in capsys.readouterr().out


def test_restore_refuses_while_any_shardlab_process_is_connected(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_user(url, "ada")
    backup = tmp_path / "before.dump"
    assert _cli(tmp_path, "backup", str(backup)) == 0
    _add_user(url, "bob")
    # A web process on another host: its lock is all this host could see of it.
    running = app_lock(tmp_path / "elsewhere", url)
    try:
        assert _cli(tmp_path, "restore", str(backup), "--yes") == 2
        assert "the app is running" in capsys.readouterr().err
    finally:
        running.close()
    # A process that holds connections in its pool but not the lock.
    engine = make_engine(url)
    with engine.connect():
        assert _cli(tmp_path, "restore", str(backup), "--yes") == 2
        assert "the app is running" in capsys.readouterr().err
    engine.dispose()
    assert _usernames(url) == ["ada", "bob"]
    assert _cli(tmp_path, "restore", str(backup), "--yes") == 0
    assert _usernames(url) == ["ada"]


def test_an_older_backup_restores_under_a_newer_schema(
    postgres: PostgresServer, url: str, tmp_path: Path
) -> None:
    older = postgres.url(postgres.create_database(template="template0"))
    command.upgrade(alembic_config(older), "0012")
    _add_user(older, "ada")
    backup = tmp_path / "0012.dump"
    backup_database(older, backup)
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        # A newer version's table pointing at one the backup replaces: it must not stop
        # the restore dropping "user".
        conn.execute(text('CREATE TABLE newer (id int PRIMARY KEY, user_id int REFERENCES "user")'))
    engine.dispose()
    assert _cli(tmp_path, "restore", str(backup), "--yes") == 0
    assert _usernames(url) == ["ada"]
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        tables = set(conn.execute(text("SELECT tablename FROM pg_tables")).scalars())
        assert "newer" not in tables and "usersession" in tables
    engine.dispose()
    migrate(url)  # what restore ran already: nothing left to do


def test_damaged_foreign_and_misplaced_files_are_refused(
    postgres: PostgresServer, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_user(url, "ada")
    good = tmp_path / "good.dump"
    assert _cli(tmp_path, "backup", str(good)) == 0
    cut = tmp_path / "cut.dump"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    foreign = tmp_path / "foreign.dump"
    pg_backup.dump(postgres.url(postgres.create_database(template="template0")), foreign)
    sqlite_backup = tmp_path / "sqlite.db"
    with sqlite3.connect(sqlite_backup) as conn:
        conn.execute("CREATE TABLE alembic_version (version_num TEXT)")
        conn.execute('CREATE TABLE "user" (id INTEGER)')
    conn.close()
    for path, words in (
        (cut, "failed"),
        (foreign, "not a ShardLab backup"),
        (sqlite_backup, "is a sqlite backup and the database is postgresql"),
    ):
        capsys.readouterr()
        assert _cli(tmp_path, "restore", str(path), "--yes") == 2
        assert words in capsys.readouterr().err
    assert _cli(tmp_path, "check", str(cut)) == 2
    assert _usernames(url) == ["ada"]


def test_missing_client_programs_are_named(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert _cli(tmp_path, "backup", str(tmp_path / "b.dump")) == 2
    error = capsys.readouterr().err
    assert "pg_dump is missing" in error and "postgresql-client" in error
