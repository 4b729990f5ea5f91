"""The SQLite engine (WAL, busy_timeout, foreign keys) and the session dependency."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, TypeVar

from alembic import command
from alembic.config import Config
from fastapi import Depends, Request
from sqlalchemy import Engine, event
from sqlmodel import Session, create_engine

from app.config import ROOT_DIR


def make_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record) -> None:  # noqa: ANN001 - DBAPI objects are untyped
        cursor = dbapi_conn.cursor()
        # busy_timeout first: switching to WAL can itself meet a locked database.
        cursor.execute("PRAGMA busy_timeout=5000")
        cursor.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable in WAL mode except against power loss, which a study box accepts.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def alembic_config(url: str) -> Config:
    config = Config(str(ROOT_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT_DIR / "migrations"))
    config.set_main_option("sqlalchemy.url", url)
    return config


def migrate(database_path: Path) -> None:
    """Bring the database file up to the newest migration, creating it if needed."""
    database_path.parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(f"sqlite:///{database_path}"), "head")


def get_session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.engine) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


Row = TypeVar("Row")

# SQLite stores integers in 8 bytes; an id from a URL outside that range cannot be a row.
SQLITE_INTEGERS = range(-(2**63), 2**63)


def get_row(session: Session, model: type[Row], key: int | tuple[int | None, ...]) -> Row | None:
    """session.get for a key read from a request: one SQLite cannot hold is no row (None)
    rather than an OverflowError from the driver, so the page answers 404 like any other
    id that does not exist."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(part is None or part not in SQLITE_INTEGERS for part in parts):
        return None
    return session.get(model, key)
