"""A request the database is too busy for is answered 503 with Retry-After (app/errors.py
answer_busy_database), not a 500: no connection within the pool's timeout (found with 500
learners on four web processes, where the session check in the language middleware waited
30 s for one), or SQLite's write lock held past busy_timeout (found on the single box)."""

from __future__ import annotations

import sqlite3

from fastapi.testclient import TestClient
from sqlmodel import create_engine

from app.config import Settings
from app.main import create_app
from tests.utils import csrf_token, one_slow_connection, register


def test_no_connection_in_time_is_a_503_to_come_back(settings: Settings) -> None:
    app = create_app(settings)
    with TestClient(app) as client:
        register(client, "ada")
        assert client.get("/progress").status_code == 200
        # The same database behind a pool of one connection that waits 0.2 s, its one
        # connection held: every request that reads the database waits, then gives up.
        app.state.engine = one_slow_connection(app.state.engine.url)
        with app.state.engine.connect():
            page = client.get("/progress", headers={"accept": "text/html"})
            api = client.get("/cards/zero-stages", headers={"accept": "application/json"})
        assert page.status_code == api.status_code == 503
        assert page.headers["retry-after"] == api.headers["retry-after"] == "5"
        assert "very busy" in page.text and "very busy" in api.json()["detail"]
        # Signed out, the first read is the route's own (the log-in's), inside the 500 page's
        # middleware: still a 503.
        visitor = TestClient(app)
        token = csrf_token(visitor)
        with app.state.engine.connect():
            login = visitor.post(
                "/login", data={"username": "ada", "password": "wrong", "csrf_token": token}
            )
        assert login.status_code == 503 and login.headers["retry-after"] == "5"
        # A connection free again: the same learner, the same page.
        assert client.get("/progress").status_code == 200


def test_sqlite_locked_past_its_busy_timeout_is_a_503_and_nothing_half_kept(
    settings: Settings,
) -> None:
    app = create_app(settings)
    with TestClient(app) as client:
        register(client, "ada")
        token = csrf_token(client)
        # The same file behind connections that wait 0.2 s for SQLite's write lock, and another
        # connection holding that lock throughout: the log-out's write gives up.
        app.state.engine = create_engine(
            app.state.engine.url, connect_args={"check_same_thread": False, "timeout": 0.2}
        )
        holder = sqlite3.connect(settings.database_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            out = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert out.status_code == 503 and out.headers["retry-after"] == "5"
        assert "very busy" in out.text
        # The session did not end, as the 503 says: the same learner is still signed in, and
        # the log-out goes through once the lock is free.
        assert "ada" in client.get("/progress").text
        out = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
        assert out.status_code == 303
        assert client.get("/progress", follow_redirects=False).status_code in (302, 303, 401)
