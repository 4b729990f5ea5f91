"""The engine (SQLite: WAL, busy_timeout, foreign keys; PostgreSQL: a pool shared by a
process's threads), migrations at start-up, and the session dependency."""

from __future__ import annotations

import select
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from alembic import command
from alembic.config import Config
from fastapi import Depends, Request
from sqlalchemy import Engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import ORMExecuteState
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
        return _postgres_engine(url, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)
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
    return _postgres_engine(engine.url, pool_size=1, max_overflow=0)


def _postgres_engine(url: str | URL, **pool: Any) -> Engine:  # noqa: ANN401 - create_engine's
    engine = create_engine(url, connect_args={"application_name": APPLICATION_NAME}, **pool)

    @event.listens_for(engine, "checkout")
    def _replace_if_ended(dbapi_conn, _record, _proxy) -> None:  # noqa: ANN001 - DBAPI objects
        """A connection the server has ended (a restart, pg_terminate_backend, an idle
        timeout) is replaced before a request gets it, not found by the request as an error.
        The server says so on the socket as it ends one (an error message, then the close), and
        an idle connection has nothing else to read: one poll of the socket tells, where
        SQLAlchemy's pool_pre_ping sends a statement and waits for the answer, a round trip
        on every checkout (two a signed-in page) for what is almost never the case. The pool
        connects anew when this raises (pool/base.py, _ConnectionFairy._checkout)."""
        if dbapi_conn.closed or _has_input(dbapi_conn.fileno()):
            raise DisconnectionError("the server ended this connection")

    return engine


def _has_input(fd: int) -> bool:
    """Whether the socket `fd` has something to read (or is closed), without waiting. poll,
    not select: select cannot take a descriptor past 1023, which a busy process reaches."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


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


class RequestSession(Session):
    """A session that answers a request. A transaction that only read ends with COMMIT, when
    the session closes after its work succeeded (a `with` block left without an exception, a
    route that answered): for a read the same as ROLLBACK, but psycopg forgets every statement
    it has prepared on a connection at each ROLLBACK (and sends DEALLOCATE ALL), so no
    statement reached its fifth run and was prepared, and PostgreSQL parsed and planned each
    one anew on every page (docs/benchmarks.md). A transaction that wrote (an ORM statement
    other than a SELECT, or a flush) and was left uncommitted, an object changed and not
    flushed, work that failed: rolled back, as closing always did."""

    def __exit__(self, type_: object, value: object, traceback: object) -> None:
        self.finish(succeeded=type_ is None)

    def finish(self, succeeded: bool) -> None:
        """End the work: its read committed if it succeeded, then closed; the connection goes
        back even if that COMMIT failed."""
        try:
            if succeeded:
                self.end_read()
        finally:
            self.close()

    def end_read(self) -> None:
        """COMMIT the transaction if it only read and nothing is left to flush; the objects it
        loaded keep their values, as after a close."""
        if not self.in_transaction() or self.info.get(_WROTE):
            return
        if self.new or self.dirty or self.deleted:
            return
        expire, self.expire_on_commit = self.expire_on_commit, False
        try:
            self.commit()
        finally:
            self.expire_on_commit = expire


# In session.info: a write since the transaction began (since the last commit or rollback).
_WROTE = "shardlab.wrote"


@event.listens_for(RequestSession, "do_orm_execute")
def _note_statement(state: ORMExecuteState) -> None:
    if not state.is_select:  # an insert, update or delete, or text() that may be either
        state.session.info[_WROTE] = True


@event.listens_for(RequestSession, "after_flush")
def _note_flush(session: Session, _context: object) -> None:
    session.info[_WROTE] = True


@event.listens_for(RequestSession, "after_commit")
@event.listens_for(RequestSession, "after_rollback")
def _note_end(session: Session) -> None:
    session.info[_WROTE] = False


async def get_session(request: Request) -> AsyncIterator[Session]:
    """The route's session. Made on the loop: a Session connects only when first used, in the
    route's thread; a sync dependency would cost a thread of its own to enter. Closed (as
    RequestSession says) in a thread, under a limiter of its own, as FastAPI closes a sync
    one: the shared one's threads may all be waiting for a connection that only this gives
    back. Shielded, as there too: a request cancelled (its client gone) still gives its
    connection back."""
    session = RequestSession(request.app.state.engine)
    succeeded = False
    try:
        yield session
        succeeded = True
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(
                session.finish, succeeded, limiter=anyio.CapacityLimiter(1)
            )


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
