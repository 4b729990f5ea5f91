"""A signed-in request reads its session once (issue #31): the check that the session is live
gives the header's user, the language setting and the route's user, and still refuses a
session ended a moment before, in this process or any other."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlmodel import Session, col, select, update

from app.accounts import sessions
from app.accounts.models import User
from tests.utils import register


@contextmanager
def statements(client: TestClient) -> Iterator[list[str]]:
    """The SQL the app runs meanwhile: through its engine, and through the connections of
    its own that the event loop reads the session with (app/db.py engine_beside)."""
    engines = [client.app.state.engine, client.app.state.engine_beside]
    seen: list[str] = []

    def note(_conn, _cursor, statement: str, *_args) -> None:  # noqa: ANN001
        seen.append(statement.lower())

    for engine in engines:
        event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", note)


def session_lookups(seen: list[str]) -> int:
    return sum(1 for s in seen if "from user join usersession" in s.replace('"', ""))


# A card page (the header's user and the language), a page whose route takes CurrentUser
# (the same rows, merged into its own database session), and the dashboard.
@pytest.mark.parametrize("path", ["/cards/zero-stages", "/progress", "/"])
def test_a_signed_in_page_looks_its_session_up_at_most_once(client: TestClient, path: str) -> None:
    register(client, "ada")
    assert client.get(path).status_code == 200  # a first visit to a card is written once
    with statements(client) as seen:
        page = client.get(path)
    assert page.status_code == 200 and "ada" in page.text
    # None on SQLite when nothing was committed since the last (test_a_kept_check_...).
    assert session_lookups(seen) <= 1, seen
    # Nor is the user read again by id (for the header or the language setting).
    assert not [s for s in seen if re.search(r"from \"?user\"? where", s)], seen


def test_the_language_comes_from_the_same_read(client: TestClient) -> None:
    register(client, "ada")
    with Session(client.app.state.engine) as session:
        ada = session.exec(select(User)).one()
        ada.language = "zh"
        session.add(ada)
        session.commit()
    with statements(client) as seen:
        page = client.get("/cards/zero-stages")
    assert '<html lang="zh-CN"' in page.text
    assert session_lookups(seen) == 1


def test_a_session_ended_elsewhere_is_refused_on_the_next_request(client: TestClient) -> None:
    register(client, "ada")
    assert client.get("/progress", follow_redirects=False).status_code == 200
    # Ended straight in the database, as another web process or the admin CLI would.
    with Session(client.app.state.engine) as session:
        sessions.end_all_sessions(session, 1)
        session.commit()
    refused = client.get("/progress", follow_redirects=False)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/login")
    assert "ada" not in client.get("/cards/zero-stages").text


def test_a_kept_check_is_looked_up_again_after_any_commit(client: TestClient) -> None:
    """On SQLite the check's answer is kept while nothing is committed to the file, by any
    connection (PRAGMA data_version); on PostgreSQL every request looks the session up."""
    register(client, "ada")
    client.get("/progress")
    with statements(client) as seen:
        assert "ada" in client.get("/progress").text
    sqlite = client.app.state.engine.dialect.name == "sqlite"
    assert session_lookups(seen) == (0 if sqlite else 1)
    # Any commit that changes the file, here one that changes nothing the page shows.
    with Session(client.app.state.engine) as session:
        session.exec(update(User).where(col(User.id) == 1).values(language="en"))
        session.commit()
    with statements(client) as seen:
        assert "ada" in client.get("/progress").text
    assert session_lookups(seen) == 1
