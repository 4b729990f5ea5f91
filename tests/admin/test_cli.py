"""The admin CLI on a real database (the SQLite file, or in the PostgreSQL pass a database
of the test's own): accounts, invites, online backup, checked restore."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app.accounts.invites import invite_problem
from app.accounts.models import User
from app.admin.__main__ import main
from app.admin.backup import app_lock
from app.config import ROOT_DIR, Settings
from app.db import make_engine
from app.security import verify_password
from tests.pg_server import require_server
from tests.utils import database_under_test


@pytest.fixture(autouse=True)
def _database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads its database from the environment, as in a container."""
    if database_under_test() == "postgresql":
        url = require_server().database_for(tmp_path / "data")
        monkeypatch.setenv("SHARDLAB_DATABASE_URL", url)


def _cli(data_dir: Path, *args: str, password: str | None = None, monkeypatch=None) -> int:
    if password is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(password + "\n"))
    return main(["--data-dir", str(data_dir), *args])


def _url(data_dir: Path) -> str:
    return Settings(data_dir=data_dir).database_url


def _users(data_dir: Path) -> dict[str, User]:
    engine = make_engine(_url(data_dir))
    with Session(engine) as session:
        users = {u.username: u for u in session.exec(select(User))}
    engine.dispose()
    return users


def test_help_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.admin", "--help"], cwd=ROOT_DIR, capture_output=True, text=True
    )
    assert result.returncode == 0
    for command in (
        "create-admin",
        "disable",
        "reset-password",
        "create-invite",
        "list-invites",
        "revoke-invite",
        "backup",
        "restore",
    ):
        assert command in result.stdout


def test_first_admin_on_a_fresh_data_dir_then_users(tmp_path: Path, monkeypatch, capsys) -> None:
    data = tmp_path / "data"
    assert (
        _cli(
            data,
            "create-admin",
            "root",
            "--password-stdin",
            password="a long secret",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    assert (
        _cli(
            data,
            "create-user",
            "ada",
            "--password-stdin",
            password="correct horse",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    users = _users(data)
    assert users["root"].is_admin and not users["ada"].is_admin
    assert verify_password("a long secret", users["root"].password_hash)
    capsys.readouterr()
    assert _cli(data, "list-users") == 0
    listing = capsys.readouterr().out
    assert "root" in listing and "ada" in listing


def test_bad_input_is_an_error_message_not_a_traceback(tmp_path: Path, monkeypatch, capsys) -> None:
    data = tmp_path / "data"
    assert (
        _cli(
            data,
            "create-user",
            "ada",
            "--password-stdin",
            password="short",
            monkeypatch=monkeypatch,
        )
        == 2
    )
    assert "Password: " in capsys.readouterr().err
    assert _cli(data, "disable", "nobody") == 2
    assert "no user called 'nobody'" in capsys.readouterr().err


def test_disable_enable_and_reset_password(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    _cli(
        data,
        "create-user",
        "ada",
        "--password-stdin",
        password="correct horse",
        monkeypatch=monkeypatch,
    )
    assert _cli(data, "disable", "ada") == 0 and _users(data)["ada"].disabled
    assert _cli(data, "enable", "ada") == 0 and not _users(data)["ada"].disabled
    assert (
        _cli(
            data,
            "reset-password",
            "ada",
            "--password-stdin",
            password="battery staple",
            monkeypatch=monkeypatch,
        )
        == 0
    )
    assert verify_password("battery staple", _users(data)["ada"].password_hash)


def _invite_listing(data_dir: Path, capsys) -> list[dict]:
    capsys.readouterr()
    assert _cli(data_dir, "list-invites", "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_create_list_and_revoke_invites(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    assert (
        _cli(data, "create-invite", "--days", "2", "--uses", "3", "--base-url", "https://x/") == 0
    )
    code, summary = capsys.readouterr().out.splitlines()
    assert "for 3 account(s)" in summary and summary.endswith(f"https://x/register?invite={code}")
    assert _cli(data, "invite") == 0  # the command's old name still works
    (second, first) = _invite_listing(data, capsys)
    assert (first["code"], first["max_uses"], first["uses"]) == (code, 3, 0)
    assert (first["status"], first["made_by"], first["used_by"]) == ("active", "CLI", [])
    assert second["max_uses"] == 1
    assert _cli(data, "revoke-invite", code) == 0
    assert capsys.readouterr().out == f"invite 1 ({code}): revoked\n"
    assert _cli(data, "revoke-invite", "2") == 0  # by id
    assert [i["status"] for i in _invite_listing(data, capsys)] == ["revoked", "revoked"]
    assert _cli(data, "revoke-invite", "nope") == 2
    assert "no invite with the code or id 'nope'" in capsys.readouterr().err
    assert _cli(data, "create-invite", "--uses", "101") == 2
    assert "1 to 100 uses" in capsys.readouterr().err
    engine = make_engine(_url(data))
    with Session(engine) as session:
        assert "withdrawn by the admin" in invite_problem(session, code)
    engine.dispose()


def _write_steadily(database: Path, stop: threading.Event, written: list[int]) -> None:
    conn = sqlite3.connect(database, timeout=5)
    conn.execute("PRAGMA journal_mode=WAL")
    while not stop.is_set():
        with conn:
            conn.execute(
                "INSERT INTO user (username, password_hash, created_at, is_admin, disabled) "
                "VALUES (?, 'x', '2026-01-01 00:00:00', 0, 0)",
                (f"user{len(written)}",),
            )
        written.append(1)
    conn.close()


@pytest.mark.sqlite_only  # PostgreSQL's: tests/admin/test_pg_backup.py
def test_backup_is_consistent_while_the_app_writes(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    _cli(
        data,
        "create-user",
        "ada",
        "--password-stdin",
        password="correct horse",
        monkeypatch=monkeypatch,
    )
    stop, written = threading.Event(), []
    writer = threading.Thread(target=_write_steadily, args=(data / "shardlab.db", stop, written))
    writer.start()
    try:
        while len(written) < 50:
            time.sleep(0.01)
        backups = [tmp_path / f"b{i}.db" for i in range(3)]
        for path in backups:
            assert _cli(data, "backup", str(path)) == 0
    finally:
        stop.set()
        writer.join()
    counts = []
    for path in backups:
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            counts.append(conn.execute("SELECT count(*) FROM user").fetchone()[0])
    assert counts == sorted(counts) and counts[0] >= 51  # snapshots taken while rows arrived
    assert not Path(str(backups[0]) + "-wal").exists()  # one self-contained file


def test_restore_brings_back_the_backup_and_refuses_while_the_app_runs(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    data = tmp_path / "data"
    _cli(
        data,
        "create-user",
        "ada",
        "--password-stdin",
        password="correct horse",
        monkeypatch=monkeypatch,
    )
    backup = tmp_path / "before.db"
    assert _cli(data, "backup", str(backup)) == 0
    _cli(
        data,
        "create-user",
        "bob",
        "--password-stdin",
        password="correct horse",
        monkeypatch=monkeypatch,
    )
    running = app_lock(data, _url(data))
    try:
        assert _cli(data, "restore", str(backup), "--yes") == 2
        assert "the app is running" in capsys.readouterr().err
    finally:
        running.close()
    assert set(_users(data)) == {"ada", "bob"}
    assert _cli(data, "restore", str(backup), "--yes") == 0
    assert set(_users(data)) == {"ada"}


@pytest.mark.sqlite_only  # PostgreSQL's: tests/admin/test_pg_backup.py
def test_restore_refuses_a_damaged_or_foreign_file(tmp_path: Path, monkeypatch, capsys) -> None:
    data = tmp_path / "data"
    _cli(
        data,
        "create-user",
        "ada",
        "--password-stdin",
        password="correct horse",
        monkeypatch=monkeypatch,
    )
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (x)")
    for path, words in ((garbage, "not a readable SQLite database"), (foreign, "not a ShardLab")):
        assert _cli(data, "restore", str(path), "--yes") == 2
        assert words in capsys.readouterr().err
    assert set(_users(data)) == {"ada"}


def test_check_reports_the_live_database(tmp_path: Path, monkeypatch, capsys) -> None:
    data = tmp_path / "data"
    _cli(
        data,
        "create-user",
        "ada",
        "--password-stdin",
        password="correct horse",
        monkeypatch=monkeypatch,
    )
    assert _cli(data, "check") == 0
    assert "integrity check ok" in capsys.readouterr().out
