"""The migrations on a real PostgreSQL server: every step up and down, a schema that matches
the models, 0013's renames, and several web processes migrating one database at once."""

from __future__ import annotations

import subprocess
import sys

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.pool import NullPool

from app.config import ROOT_DIR
from app.db import alembic_config, migrate
from tests.pg_server import PostgresServer


def _head(url: str) -> str:
    head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
    assert head is not None
    return head


def _version(url: str) -> str | None:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    return version


def _tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    engine.dispose()
    return tables


def test_every_migration_goes_up_down_and_up_again(postgres: PostgresServer) -> None:
    url = postgres.url(postgres.create_database(template="template0"))
    migrate(url)
    assert _version(url) == _head(url)
    assert {"user", "quizattempt", "itemstate", "usersession", "designattempt"} <= _tables(url)
    command.downgrade(alembic_config(url), "base")
    assert _tables(url) == {"alembic_version"}
    migrate(url)
    assert _version(url) == _head(url)


def test_the_migrated_schema_matches_the_models(postgres: PostgresServer) -> None:
    url = postgres.url(postgres.create_database(template="template0"))
    migrate(url)
    # Raises if autogenerate would emit anything: on PostgreSQL it compares column types,
    # server defaults and the lower(username) index too, which SQLite's reflection cannot.
    command.check(alembic_config(url))


def test_usernames_differing_in_case_are_renamed_before_the_unique_index(
    postgres: PostgresServer,
) -> None:
    url = postgres.url(postgres.create_database(template="template0"))
    command.upgrade(alembic_config(url), "0012")
    engine = create_engine(url, poolclass=NullPool)
    with engine.begin() as conn:
        for name in ("Ada", "ada", "ADA", "ada-2x"):
            conn.execute(
                text(
                    'INSERT INTO "user" (username, password_hash, created_at, is_admin, '
                    "disabled) VALUES (:name, 'x', now(), false, false)"
                ),
                {"name": name},
            )
    migrate(url)
    with engine.connect() as conn:
        names = conn.execute(text('SELECT username FROM "user" ORDER BY id')).scalars().all()
        assert names == ["Ada", "ada-2", "ADA-3", "ada-2x"]
        with pytest.raises(Exception, match="ix_user_username_lower"):
            conn.execute(
                text(
                    'INSERT INTO "user" (username, password_hash, created_at, is_admin, '
                    "disabled) VALUES ('aDa', 'x', now(), false, false)"
                )
            )
    engine.dispose()


def test_web_processes_starting_together_migrate_once(postgres: PostgresServer) -> None:
    """Four processes migrate one empty database at the same moment; without the advisory
    lock two of them create alembic_version or the first table at once and one fails."""
    url = postgres.url(postgres.create_database(template="template0"))
    # Each imports the app, says so, and waits for the word to go: Python's start-up would
    # otherwise spread them out over seconds.
    code = (
        "import sys; from app.db import migrate; print('ready', flush=True); "
        "sys.stdin.readline(); migrate(sys.argv[1])"
    )
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", code, url],
            cwd=ROOT_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(4)
    ]
    for starter in starters:
        assert starter.stdout is not None and starter.stdout.readline() == "ready\n"
    for starter in starters:
        assert starter.stdin is not None
        starter.stdin.write("go\n")
        starter.stdin.flush()
    outputs = [starter.communicate(timeout=120)[0] for starter in starters]
    assert [starter.returncode for starter in starters] == [0] * 4, "\n".join(outputs)
    assert _version(url) == _head(url)
