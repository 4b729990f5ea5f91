"""The route's database session (app/db.py get_session) gives its connection back however the
request ends, a request cancelled by its client gone included: a connection kept by a
cancelled request is one fewer for every later one. A request's session (RequestSession) ends
a transaction that only read with COMMIT, and rolls back everything else, as closing did."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from sqlalchemy import Engine, event, select, text, update

from app.accounts.models import User
from app.db import RequestSession, get_session, make_engine, migrate


def test_a_cancelled_request_gives_its_connection_back(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(engine=engine)))

    async def cancelled_while_using_it() -> None:
        dependency = get_session(request)  # type: ignore[arg-type]
        session = await dependency.__anext__()
        await anyio.to_thread.run_sync(lambda: session.exec(text("SELECT 1")).one())
        assert engine.pool.checkedout() == 1
        with anyio.CancelScope() as scope:
            scope.cancel()
            # What FastAPI does with the dependency once the route is cancelled.
            await dependency.aclose()

    try:
        anyio.run(cancelled_while_using_it)
        assert engine.pool.checkedout() == 0
    finally:
        engine.dispose()


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    migrate(tmp_path / "app.db")
    engine = make_engine(f"sqlite:///{tmp_path / 'app.db'}")
    with RequestSession(engine) as session:
        session.add(User(username="ada", password_hash="x"))
        session.commit()
    yield engine
    engine.dispose()


@pytest.fixture
def endings(engine: Engine) -> list[str]:
    """How each transaction on `engine` ended, as the driver was told: commit or rollback."""
    seen: list[str] = []
    event.listen(engine, "commit", lambda _conn: seen.append("commit"))
    event.listen(engine, "rollback", lambda _conn: seen.append("rollback"))
    return seen


def _name(engine: Engine) -> str:
    with engine.connect() as conn:
        return conn.execute(select(User.username)).scalar_one()


def test_a_read_ends_with_commit_and_its_rows_keep_their_values(
    engine: Engine, endings: list[str]
) -> None:
    with RequestSession(engine) as session:
        user = session.exec(select(User)).scalars().one()  # type: ignore[call-overload]
    assert endings == ["commit"]
    assert user.username == "ada"  # loaded, not expired by that commit


def test_a_write_left_uncommitted_is_rolled_back(engine: Engine, endings: list[str]) -> None:
    with RequestSession(engine) as session:
        session.exec(update(User).values(username="bob"))  # type: ignore[call-overload]
    assert endings == ["rollback"] and _name(engine) == "ada"


def test_a_change_not_flushed_is_rolled_back(engine: Engine, endings: list[str]) -> None:
    with RequestSession(engine) as session:
        user = session.exec(select(User)).scalars().one()  # type: ignore[call-overload]
        user.username = "bob"  # changed for a page, never meant to be kept
    assert endings == ["rollback"] and _name(engine) == "ada"


def test_work_that_failed_is_rolled_back(engine: Engine, endings: list[str]) -> None:
    with pytest.raises(RuntimeError), RequestSession(engine) as session:
        session.exec(select(User)).all()  # type: ignore[call-overload]
        raise RuntimeError
    assert endings == ["rollback"]


def test_reads_after_a_commit_end_with_commit(engine: Engine, endings: list[str]) -> None:
    with RequestSession(engine) as session:
        user = session.exec(select(User)).scalars().one()  # type: ignore[call-overload]
        user.username = "bob"
        session.commit()
        session.exec(select(User)).all()  # type: ignore[call-overload]
    assert endings == ["commit", "commit"] and _name(engine) == "bob"


def test_text_may_write_so_a_session_that_ran_it_is_rolled_back(
    engine: Engine, endings: list[str]
) -> None:
    with RequestSession(engine) as session:
        session.exec(text("SELECT 1")).one()  # type: ignore[call-overload]
    assert endings == ["rollback"]


def test_a_route_that_failed_rolls_back_its_read(engine: Engine, endings: list[str]) -> None:
    request = SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(engine=engine)))

    async def route(fails: bool) -> None:
        dependency = get_session(request)  # type: ignore[arg-type]
        session = await dependency.__anext__()
        await anyio.to_thread.run_sync(lambda: session.exec(select(User)).all())
        if fails:
            with pytest.raises(RuntimeError):
                await dependency.athrow(RuntimeError())
        else:
            with pytest.raises(StopAsyncIteration):
                await dependency.__anext__()

    anyio.run(route, True)
    anyio.run(route, False)
    assert endings == ["rollback", "commit"]


def test_a_commit_that_fails_still_gives_the_connection_back(engine: Engine) -> None:
    def refuse(_session: object) -> None:
        raise RuntimeError("the server went away")

    with pytest.raises(RuntimeError), RequestSession(engine) as session:
        event.listen(session, "before_commit", refuse)
        session.exec(select(User)).all()  # type: ignore[call-overload]
    assert engine.pool.checkedout() == 0
