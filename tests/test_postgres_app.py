"""The app on PostgreSQL, whichever database the rest of the pass uses: the setting that
chooses it, the engine's connections, ids bounded to 4-byte integers, a restart that keeps a
learner's answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import text
from sqlmodel import Session

from app.config import Settings
from app.db import APPLICATION_NAME, get_row, make_engine
from app.main import create_app
from app.quiz.models import StudyGroup
from tests.pg_server import PostgresServer
from tests.utils import csrf_token, make_settings, refresh_csrf, register


def test_no_database_url_is_the_sqlite_file_in_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert settings.database_url == f"sqlite:///{tmp_path / 'shardlab.db'}"
    assert settings.database_kind == "sqlite"
    assert settings.database_path == tmp_path / "shardlab.db"


def test_the_environment_names_a_postgresql_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql+psycopg://shardlab:secret@db:5432/shardlab"
    monkeypatch.setenv("SHARDLAB_DATABASE_URL", url)
    settings = Settings(data_dir=tmp_path)
    assert (settings.database_url, settings.database_kind) == (url, "postgresql")
    with pytest.raises(ValueError, match="there is no SQLite file"):
        settings.database_path  # noqa: B018 - the property is what is tested


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://u:p@db/shardlab", "write postgresql+psycopg://"),
        ("mysql+pymysql://u:p@db/shardlab", "mysql+pymysql:// is not supported"),
        ("sqlite://", "must name a file"),
        ("sqlite:///:memory:", "must name a file"),
        ("postgresql+psycopg://u:p@db", "must name the database"),
        ("db.example.org:5432", "not a database URL"),
    ],
)
def test_a_database_url_we_do_not_run_on_is_refused_with_the_forms_we_do(
    monkeypatch: pytest.MonkeyPatch, url: str, says: str
) -> None:
    monkeypatch.setenv("SHARDLAB_DATABASE_URL", url)
    with pytest.raises(ValidationError) as refused:
        Settings()
    assert says in str(refused.value)


def test_a_refused_database_url_keeps_its_password_out_of_the_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHARDLAB_DATABASE_URL", "mysql://learner:hunter2secret@db.example.org/x")
    with pytest.raises(ValidationError) as refused:
        Settings()
    assert "mysql://" in str(refused.value)
    assert "hunter2secret" not in str(refused.value)


def _pg_settings(postgres: PostgresServer, data_dir: Path) -> Settings:
    return make_settings(data_dir, database_url_setting=postgres.database_for(data_dir))


def test_the_app_s_connections_name_themselves(postgres: PostgresServer, tmp_path: Path) -> None:
    settings = _pg_settings(postgres, tmp_path / "data")
    with TestClient(create_app(settings)) as client:
        assert client.get("/healthz").status_code == 200
        database = settings.database_url.rsplit("/", 1)[1]
        with postgres.connect() as conn:
            names = conn.execute(
                "SELECT application_name FROM pg_stat_activity WHERE datname = %s", (database,)
            ).fetchall()
    # The app's lock connection and its pool's: a restore counts these to refuse.
    assert names and {name for (name,) in names} == {APPLICATION_NAME}


def test_connections_given_back_stay_open_for_the_next_requests(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    # A burst of requests each holding a connection, twice: the second opens none. Connections
    # past pool_size used to be closed as they were given back, and opened again by the next
    # burst, each a new server process and a password exchange.
    settings = _pg_settings(postgres, tmp_path / "data")
    database = settings.database_url.rsplit("/", 1)[1]
    engine = make_engine(settings.database_url)

    def burst() -> None:
        held = [engine.connect() for _ in range(12)]
        for conn in held:
            conn.execute(text("SELECT 1"))
        for conn in held:
            conn.close()

    def server_processes() -> set[int]:
        with postgres.connect() as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)
            ).fetchall()
        return {pid for (pid,) in rows}

    try:
        burst()
        kept = server_processes()
        burst()
        assert len(kept) == 12 and server_processes() == kept
    finally:
        engine.dispose()


@pytest.mark.parametrize("key", [2**31, -(2**31) - 1, 2**63])
def test_an_id_past_4_bytes_is_no_row_on_postgresql(
    postgres: PostgresServer, tmp_path: Path, key: int
) -> None:
    settings = _pg_settings(postgres, tmp_path / "data")
    engine = make_engine(settings.database_url)
    with Session(engine) as session:
        # PostgreSQL's integer column refuses the value itself ("out of range"): a 500
        # before the bound.
        assert get_row(session, StudyGroup, key) is None
        assert get_row(session, StudyGroup, 2**31 - 1) is None  # holdable, and not there
    engine.dispose()
    with TestClient(create_app(settings)) as client:
        register(client)
        assert client.get(f"/groups/{key}").status_code == 404
        assert client.post(f"/groups/{key}/leave").status_code == 404


def test_answers_survive_a_restart_on_postgresql(postgres: PostgresServer, tmp_path: Path) -> None:
    settings = _pg_settings(postgres, tmp_path / "data")
    with TestClient(create_app(settings)) as client:
        register(client, "ada")
        created = client.post("/groups", data={"name": "Night owls"}, follow_redirects=False)
        assert created.status_code == 303
    with TestClient(create_app(settings)) as client:
        refresh_csrf(client)
        page = client.post(
            "/login",
            data={"username": "ADA", "password": "correct horse"},
            follow_redirects=True,
        )
        assert page.status_code == 200
        assert "Night owls" in client.get("/groups").text
    engine = make_engine(settings.database_url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM studygroup")).scalar_one() == 1
    engine.dispose()


def test_a_nul_in_a_log_in_form_is_refused_and_one_in_an_import_is_kept_as_ufffd(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """PostgreSQL's text cannot hold a NUL (psycopg will not even send one in a WHERE clause):
    a log-in name with one is refused; an imported answer's is kept as U+FFFD."""
    settings = _pg_settings(postgres, tmp_path / "data")
    with TestClient(create_app(settings)) as client:
        typed = {"username": "ada\x00", "password": "correct horse"}
        login = client.post("/login", data={**typed, "csrf_token": csrf_token(client)})
        assert login.status_code == 422 and "NUL" in login.text
        register(client, "ada")
        exported = client.get("/progress/export").json()
        attempt = {
            "item_id": "fx-numeric", "kind": "numeric", "question_params": {},
            "prompt": "How many bytes?\x00", "answer": 2.0, "expected": 2.0, "answer_text": "2",
            "unit": "B", "correct": True, "rating": 3, "duration_ms": 1000,
            "created_at": "2026-11-01T10:00:00+00:00",
        }  # fmt: skip
        body = json.dumps({**exported, "attempts": [attempt]})
        response = client.post("/progress/import", files={"file": ("p.json", body)})
        assert response.status_code == 200, response.text[-2000:]
        (kept,) = client.get("/progress/export").json()["attempts"]
        assert kept["prompt"] == "How many bytes?\ufffd"


def _statements_sent(
    postgres: PostgresServer, database: str, action: Callable[[], object]
) -> list[str]:
    """The statements `database`'s connections sent the server while `action` ran, from the
    server's own log (log_statement set for that database alone; the pass runs one test at a
    time), each as its first line: `execute <unnamed>: SELECT ...`, `statement: BEGIN ...`."""
    with postgres.connect() as conn:
        conn.autocommit = True
        conn.execute(f"ALTER DATABASE \"{database}\" SET log_statement = 'all'")
    start = postgres.log.stat().st_size
    action()
    with postgres.log.open(errors="replace") as log:
        log.seek(start)
        lines = log.read().splitlines()
    return [line.split("LOG:  ", 1)[1] for line in lines if "LOG:  " in line]


def test_a_signed_in_page_costs_the_server_one_statement_for_its_session_check(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """A card page reads nothing but the session: one SELECT, sent alone. SQLAlchemy's
    pool_pre_ping sent `;` before it, and a transaction put BEGIN and ROLLBACK around it: four
    round trips for one read (app/db.py, app/security.py checked_user)."""
    settings = _pg_settings(postgres, tmp_path / "data")
    database = settings.database_url.rsplit("/", 1)[1]
    # The app's connections log their statements from their start: the setting is read then.
    _statements_sent(postgres, database, lambda: None)
    with TestClient(create_app(settings)) as client:
        register(client)
        assert client.get("/cards/zero-stages").status_code == 200  # the page kept from now
        sent = _statements_sent(postgres, database, lambda: client.get("/cards/zero-stages"))
    assert len(sent) == 1, sent
    assert sent[0].startswith('execute <unnamed>: SELECT "user".id'), sent
    assert "usersession.token_sha256" in sent[0], sent


def test_a_connection_the_server_ended_is_replaced_before_a_request_gets_it(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """The server ends every pooled connection (as a restart does); the next requests, each
    taking one of them, are answered, not 500s."""
    settings = _pg_settings(postgres, tmp_path / "data")
    database = settings.database_url.rsplit("/", 1)[1]
    with TestClient(create_app(settings)) as client:
        register(client)
        for _ in range(3):
            assert client.get("/quiz").status_code == 200
        with postgres.connect() as conn:
            conn.autocommit = True
            # All but the app's lock, an advisory lock held on a connection of its own.
            ended = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
                " AND application_name = %s AND pid NOT IN"
                " (SELECT pid FROM pg_locks WHERE locktype = 'advisory')",
                (database, APPLICATION_NAME),
            ).fetchall()
        assert ended and all(ok for (ok,) in ended)
        for _ in range(5):
            assert client.get("/quiz").status_code == 200
            assert client.get("/progress").status_code == 200


def test_a_connection_taken_from_the_pool_costs_the_server_nothing(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    settings = _pg_settings(postgres, tmp_path / "data")
    database = settings.database_url.rsplit("/", 1)[1]
    _statements_sent(postgres, database, lambda: None)  # before the engine connects
    engine = make_engine(settings.database_url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        sent = _statements_sent(postgres, database, lambda: engine.connect().close())
        assert sent == []
    finally:
        engine.dispose()


def test_a_page_s_statements_are_prepared_once_it_has_been_asked_a_few_times(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """psycopg prepares a statement on its fifth run on a connection, and forgets every one it
    prepared at each ROLLBACK: a read that ended with ROLLBACK, as every page's did, meant none
    was ever prepared, and PostgreSQL parsed and planned each anew (app/db.py RequestSession)."""
    settings = _pg_settings(postgres, tmp_path / "data")
    database = settings.database_url.rsplit("/", 1)[1]
    _statements_sent(postgres, database, lambda: None)  # before the app connects
    with TestClient(create_app(settings)) as client:
        register(client)
        for _ in range(6):
            assert client.get("/quiz").status_code == 200
        sent = _statements_sent(postgres, database, lambda: client.get("/quiz"))
    runs = [s for s in sent if s.startswith("execute")]
    assert len(runs) >= 4 and all(s.startswith("execute _pg3_") for s in runs), sent
    assert [s for s in sent if not s.startswith("execute")] == [
        "statement: BEGIN ISOLATION LEVEL READ COMMITTED",
        "statement: COMMIT",
    ]
