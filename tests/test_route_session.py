"""The route's database session (app/db.py get_session) gives its connection back however the
request ends, a request cancelled by its client gone included: a connection kept by a
cancelled request is one fewer for every later one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import anyio
from sqlalchemy import text

from app.db import get_session, make_engine


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
