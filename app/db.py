"""The engine (SQLite: WAL, busy_timeout, foreign keys; PostgreSQL: a pool shared by a
process's threads), migrations at start-up, and the session dependency."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from alembic import command
from alembic.config import Config
from fastapi import Depends, Request
from sqlalchemy import Engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import SingletonThreadPool
from sqlmodel import Session, create_engine

from app.config import ROOT_DIR, database_kind

# What every ShardLab connection to PostgreSQL calls itself in pg_stat_activity: a restore
# counts them to refuse while the app runs (app/admin/pg_backup.py).
APPLICATION_NAME = "shardlab"

# Each web process keeps up to POOL_SIZE connections open, besides the one holding its app
# lock (app/admin/pg_backup.py): 4 processes use at most 64 of PostgreSQL's default 100,
# leaving room for the admin CLI and backups. None beyond them: SQLAlchemy closes one given
# back while pool_size others wait idle, and under a cohort's load (5 kept, 10 more allowed)
# the processes opened 4.6 a second, each a new server process on PostgreSQL's side and a
# password exchange (SCRAM) on both (docs/benchmarks.md, "Connections kept").
POOL_SIZE = 15
POOL_OVERFLOW = 0

# The advisory lock migrations take on PostgreSQL (migrations/env.py): any bigint, the same
# in every process; these are the bytes of "SHRD".
MIGRATION_LOCK_KEY = 0x53485244


SQLITE_POOL_SIZE = 40
SQLITE_POOL_OVERFLOW = 10


def make_engine(url: str) -> Engine:
    if database_kind(url) == "postgresql":
        return create_engine(
            url,
            # A connection the server closed (a restart, an idle timeout) is replaced before
            # a request gets it, not discovered by the request as an error.
            pool_pre_ping=True,
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
            connect_args={"application_name": APPLICATION_NAME},
        )
    # As many connections as the thread pool has threads (AnyIO's default, 40) and a few for
    # the event loop's own reads: SQLAlchemy's default of 5 + 10 had threads queue for one.
    return _sqlite_engine(url, pool_size=SQLITE_POOL_SIZE, max_overflow=SQLITE_POOL_OVERFLOW)


def _sqlite_engine(url: str | URL, **pool: Any) -> Engine:  # noqa: ANN401 - create_engine's
    engine = create_engine(url, connect_args={"check_same_thread": False}, **pool)

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


def engine_beside(engine: Engine) -> Engine:
    """The same database through connections of its own, which no request takes: for work
    that must not wait behind requests for the shared pool. On SQLite, one connection per
    thread (the event loop's reads of the session, the demo line's heartbeats); on PostgreSQL
    one in all, for the heartbeats' one thread. Disposed by whoever made it."""
    if engine.dialect.name == "sqlite":
        return _sqlite_engine(engine.url, poolclass=SingletonThreadPool)
    return create_engine(
        engine.url,
        pool_pre_ping=True,
        pool_size=1,
        max_overflow=0,
        connect_args={"application_name": APPLICATION_NAME},
    )


def alembic_config(url: str) -> Config:
    config = Config(str(ROOT_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT_DIR / "migrations"))
    # configparser reads % as interpolation; a password may hold one.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(database: str | Path) -> None:
    """Bring the database (a URL, or a SQLite file's path) up to the newest migration,
    creating a SQLite file if needed.

    On PostgreSQL several web processes may start at once: migrations/env.py takes an advisory
    lock first, so one upgrades while the others wait and then find nothing left to do.
    """
    url = f"sqlite:///{database}" if isinstance(database, Path) else database
    if database_kind(url) == "sqlite":
        Path(make_url(url).database or "").parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(url), "head")


async def get_session(request: Request) -> AsyncIterator[Session]:
    """The route's session. Made on the loop: a Session connects only when first used, in the
    route's thread; a sync dependency would cost a thread of its own to enter. Closed in a
    thread (closing returns its connection, a rollback on PostgreSQL), under a limiter of its
    own, as FastAPI closes a sync one: the shared one's threads may all be waiting for a
    connection that only this close gives back. Shielded, as there too: a request cancelled
    (its client gone) still gives its connection back."""
    session = Session(request.app.state.engine)
    try:
        yield session
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(session.close, limiter=anyio.CapacityLimiter(1))


SessionDep = Annotated[Session, Depends(get_session)]


Row = TypeVar("Row")

# An Integer column is 4 bytes on PostgreSQL (the migrations make every id and count one) and
# up to 8 on SQLite: numbers from a request or an imported file are bounded to what both hold,
# so a value neither could store is refused (or no row) the same way on either database.
STORED_INTEGERS = range(-(2**31), 2**31)


def without_nul(text: str) -> str:
    """`text`, or ValueError if it holds a NUL character: PostgreSQL's text cannot (SQLite's
    can), and psycopg refuses to send one even in a WHERE clause. A pydantic validator for
    text from a request or a file, so it is refused by name on either database, not a 500."""
    if "\x00" in text:
        raise ValueError("holds a NUL character (\\u0000)")
    return text


def get_row(session: Session, model: type[Row], key: int | tuple[int | None, ...]) -> Row | None:
    """session.get for a key read from a request: one the database cannot hold is no row
    (None) rather than a driver's overflow error, so the page answers 404 like any other id
    that does not exist."""
    parts = key if isinstance(key, tuple) else (key,)
    if any(part is None or part not in STORED_INTEGERS for part in parts):
        return None
    return session.get(model, key)
