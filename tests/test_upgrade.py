"""The upgrade path: a database made by the first migration, with its users and answers,
is brought to the newest migration by the app's own start-up; every row is kept, the users
log in with their old passwords and their answers show in their progress."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from alembic import command
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from fastapi.testclient import TestClient
from sqlmodel import SQLModel

from app.db import alembic_config, make_engine
from app.main import create_app
from app.quiz.bank import QuestionBank
from app.quiz.service import question_for
from app.security import hash_password
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_in, log_out, make_settings

ITEM = "fx-generated"  # the first migration stored generated questions only
INPUTS = {"params": 7.5e9, "dp_degree": 64, "zero_stage": 2}
# What the first migration's tables hold, column by column: later migrations must keep it.
USER_COLUMNS = "id, username, password_hash, created_at"
ATTEMPT_COLUMNS = (
    "id, user_id, item_id, question_params, prompt, answer, expected, unit, correct, created_at"
)


def _scripts(url: str) -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(url))


def _stamp(moment: datetime) -> str:
    """A UTC time as SQLAlchemy's SQLite DateTime stores it."""
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


def _first_migration_database(path: Path, now: datetime) -> None:
    """The schema of the first migration only, filled with plain SQL as that version would."""
    url = f"sqlite:///{path}"
    command.upgrade(alembic_config(url), _scripts(url).get_base())
    question = question_for(QuestionBank.load(FIXTURE_CONTENT / "quiz").get(ITEM), INPUTS)
    assert question.solution is not None
    right = question.solution.answer
    attempts = [  # user id, the number typed, correct, days ago
        (1, right, True, 3), (1, right * 2, False, 2), (1, right, True, 1), (2, right, True, 1)
    ]  # fmt: skip
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO user (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)",
            [
                (1, "ada", hash_password("old password"), _stamp(now - timedelta(days=30))),
                (2, "bob", hash_password("bob's password"), _stamp(now - timedelta(days=20))),
            ],
        )
        conn.executemany(
            "INSERT INTO quizattempt (user_id, item_id, question_params, prompt, answer, "
            "expected, unit, correct, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    user_id,
                    ITEM,
                    json.dumps(INPUTS),
                    question.prompt,
                    typed,
                    right,
                    "GB",
                    correct,
                    _stamp(now - timedelta(days=days_ago)),
                )
                for user_id, typed, correct, days_ago in attempts
            ],
        )
    conn.close()


def _rows(path: Path, columns: str, table: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY id").fetchall()
    conn.close()
    return rows


def test_the_app_upgrades_a_first_migration_database_and_keeps_everything(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path / "data", migrated=False, content_dir=FIXTURE_CONTENT)
    database = settings.database_path
    database.parent.mkdir(parents=True)
    now = datetime.now(UTC)
    _first_migration_database(database, now)
    users = _rows(database, USER_COLUMNS, "user")
    attempts = _rows(database, ATTEMPT_COLUMNS, "quizattempt")

    with TestClient(create_app(settings)) as client:
        engine = make_engine(settings.database_url)
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
        engine.dispose()
        assert current == _scripts(settings.database_url).get_current_head()

        assert _rows(database, USER_COLUMNS, "user") == users
        assert _rows(database, ATTEMPT_COLUMNS, "quizattempt") == attempts

        log_in(client, "ada", "old password")
        page = client.get("/progress").text
        assert 'id="answer-count">2 of 3 correct<' in page
        assert page.count('<span class="bad">wrong</span>') == 1
        exported = client.get("/progress/export").json()["attempts"]
        assert [(a["item_id"], a["question_params"], a["correct"]) for a in exported] == [
            (ITEM, INPUTS, True), (ITEM, INPUTS, False), (ITEM, INPUTS, True)
        ]  # fmt: skip
        assert [a["created_at"][:10] for a in exported] == [
            f"{now - timedelta(days=d):%Y-%m-%d}" for d in (3, 2, 1)
        ]
        log_out(client)
        log_in(client, "bob", "bob's password")
        # The upgraded tables take new answers beside the old ones.
        assert "Recorded." in answer(client, ITEM, **RIGHT[ITEM]).text
        assert 'id="answer-count">2 of 2 correct<' in client.get("/progress").text


def test_a_database_from_before_design_answers_were_kept_upgrades_and_records_them(
    tmp_path: Path,
) -> None:
    settings = make_settings(tmp_path / "data", migrated=False, content_dir=FIXTURE_CONTENT)
    database = settings.database_path
    database.parent.mkdir(parents=True)
    command.upgrade(alembic_config(settings.database_url), "0006")
    with sqlite3.connect(database) as conn:
        conn.execute(
            "INSERT INTO user (id, username, password_hash, created_at) VALUES (1, 'ada', ?, ?)",
            (hash_password("old password"), _stamp(datetime.now(UTC))),
        )
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "designattempt" not in tables

    with TestClient(create_app(settings)) as client:
        log_in(client, "ada", "old password")
        fields = {"scenario": "2", "dp": "4", "tp": "8", "pp": "2", "zero": "1"}
        assert client.post("/mock/design", data=fields).status_code == 200
        assert _rows(database, "user_id, scenario, verdict", "designattempt") == [(1, 2, "partial")]
        assert 'data-verdict="partial"' in client.get("/progress").text


def _users_who_differ_only_in_case(path: Path, now: datetime) -> None:
    """A 0012 database, from before names were one whatever their case: "ada", "Ada" and "ADA",
    each with a password and answers of their own (1, 2 and 3 of them, every second one
    wrong), and an "ADA-2" in the way of the renames."""
    url = f"sqlite:///{path}"
    command.upgrade(alembic_config(url), "0012")
    question = question_for(QuestionBank.load(FIXTURE_CONTENT / "quiz").get(ITEM), INPUTS)
    assert question.solution is not None
    right = question.solution.answer
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO user (id, username, password_hash, created_at, is_admin, disabled) "
            "VALUES (?, ?, ?, ?, 0, 0)",
            [
                (1, "ada", hash_password("first password"), _stamp(now - timedelta(days=9))),
                (2, "Ada", hash_password("second password"), _stamp(now - timedelta(days=8))),
                (3, "ADA", hash_password("third password"), _stamp(now - timedelta(days=7))),
                # Holds the name "Ada" would get first, so the renames must pass it by.
                (4, "ADA-2", hash_password("fourth password"), _stamp(now - timedelta(days=6))),
            ],
        )
        conn.executemany(
            "INSERT INTO quizattempt (user_id, item_id, kind, question_params, prompt, answer, "
            "expected, answer_text, unit, correct, created_at) "
            "VALUES (?, ?, 'generated', ?, ?, ?, ?, '', 'GB', ?, ?)",
            [
                (
                    user_id,
                    ITEM,
                    json.dumps(INPUTS),
                    question.prompt,
                    right * (1 + n % 2),
                    right,
                    n % 2 == 0,
                    _stamp(now - timedelta(hours=n)),
                )
                for user_id in (1, 2, 3)
                for n in range(user_id)
            ],  # fmt: skip
        )
    conn.close()


def test_names_that_differ_only_in_case_are_settled_oldest_first(tmp_path: Path, caplog) -> None:
    settings = make_settings(tmp_path / "data", migrated=False, content_dir=FIXTURE_CONTENT)
    database = settings.database_path
    database.parent.mkdir(parents=True)
    _users_who_differ_only_in_case(database, datetime.now(UTC))
    attempts = _rows(database, "id, user_id, correct", "quizattempt")

    with caplog.at_level("WARNING", logger="shardlab.migrations"):
        command.upgrade(alembic_config(settings.database_url), "head")
    assert _rows(database, "id, username", "user") == [
        (1, "ada"), (2, "Ada-3"), (3, "ADA-4"), (4, "ADA-2")
    ]  # fmt: skip
    # The operator is told who to tell, and their new name.
    renames = [r.getMessage() for r in caplog.records if r.name == "shardlab.migrations"]
    assert len(renames) == 2
    assert "'Ada' (id 2) to 'Ada-3'" in renames[0] and "'ada' (id 1) is older" in renames[0]
    assert "'ADA' (id 3) to 'ADA-4'" in renames[1]
    assert _rows(database, "id, user_id, correct", "quizattempt") == attempts

    with TestClient(create_app(settings)) as client:
        for typed, password, count in (
            ("ADA", "first password", "1 of 1"),
            ("ada-3", "second password", "1 of 2"),
            ("ADA-4", "third password", "2 of 3"),
        ):
            log_in(client, typed, password)
            assert f'id="answer-count">{count} correct<' in client.get("/progress").text, typed
            log_out(client)


def test_the_migrated_schema_has_the_models_case_free_username_index(tmp_path: Path) -> None:
    # Autogenerate cannot see an index on an expression in SQLite (it warns and skips it), so
    # test_migrations_match_the_models cannot either: the two schemas' SQL is compared here.
    def username_indexes(path: Path) -> list[tuple[str, str]]:
        with sqlite3.connect(path) as conn:
            rows = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'user' "
                "AND sql IS NOT NULL ORDER BY name"
            ).fetchall()
        conn.close()
        return rows

    migrated, from_models = tmp_path / "migrated.db", tmp_path / "models.db"
    command.upgrade(alembic_config(f"sqlite:///{migrated}"), "head")
    engine = make_engine(f"sqlite:///{from_models}")
    SQLModel.metadata.create_all(engine)
    engine.dispose()
    assert username_indexes(migrated) == username_indexes(from_models)
    assert ("ix_user_username_lower",
            "CREATE UNIQUE INDEX ix_user_username_lower ON user (lower(username))") in (
        username_indexes(migrated))  # fmt: skip
