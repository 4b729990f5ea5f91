"""A learner's dashboard is kept (app/page_cache.py OWN_PAGES) and answered without reading
their progress again, until that progress changes, through any route or straight in the
database as another process would write it, or until a number on it changes with the time;
and the database itself counts every change (user.progress_version, migration 0017), on
SQLite and PostgreSQL alike."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fsrs import Card, State
from sqlalchemy import event
from sqlmodel import Session, col, delete, select, update

from app.accounts.models import User
from app.journey.models import CardVisit, StudyGoal
from app.main import create_app
from app.quiz.models import (
    DesignAttempt,
    ItemMark,
    ItemState,
    MockInterview,
    QuizAttempt,
    ReviewSettings,
)
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.quiz.test_review import RIGHT, STUDY_ORDER, answer
from tests.utils import make_settings, register


@pytest.fixture
def quiz_client(tmp_path: Path) -> Iterator[TestClient]:
    """The app on the quiz tests' small content (tests/quiz/conftest.py)."""
    settings = make_settings(tmp_path / "data", content_dir=FIXTURE_CONTENT)
    with TestClient(create_app(settings)) as client:
        yield client


@contextmanager
def route_reads(client: TestClient) -> Iterator[list[str]]:
    """The SQL a route runs meanwhile: every statement through the app's engine but the
    session check's (on SQLite that one reads through app/db.py engine_beside anyway)."""
    engine = client.app.state.engine
    seen: list[str] = []

    def note(_conn, _cursor, statement: str, *_args) -> None:  # noqa: ANN001
        if "usersession" not in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def stat(page: str, name: str) -> str:
    """A stat tile's value on the dashboard."""
    found = re.search(rf'id="stat-{name}"><span class="stat-value">([^<]*)<', page)
    assert found, page[:3000]
    return found.group(1)


def without_tokens(page: str) -> str:
    return re.sub(r'(csrf_token" value="|X-CSRF-Token": ")[^"]+', r"\1", page)


def version(client: TestClient) -> int:
    with Session(client.app.state.engine) as session:
        return session.exec(select(User.progress_version).where(User.id == 1)).one()


def test_the_dashboard_is_kept_until_an_answer_changes_it(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    first = quiz_client.get("/")
    assert first.status_code == 200 and stat(first.text, "right") == "–"
    with route_reads(quiz_client) as seen:
        again = quiz_client.get("/")
    assert seen == []  # answered from what was kept: no read of the learner's progress
    assert without_tokens(again.text) == without_tokens(first.text)
    # Each response carries its own masked token, which the page's forms post.
    assert (
        re.search(r'csrf_token" value="([^"]+)"', again.text)[1]
        != re.search(r'csrf_token" value="([^"]+)"', first.text)[1]
    )
    assert answer(quiz_client, "fx-single", **RIGHT["fx-single"]).status_code == 200
    with route_reads(quiz_client) as seen:
        after = quiz_client.get("/")
    assert seen and stat(after.text, "right") == "100%"


def test_a_write_from_another_process_changes_the_kept_dashboard(
    quiz_client: TestClient,
) -> None:
    register(quiz_client, "ada")
    assert 'id="set-a-date"' in quiz_client.get("/").text
    # Written straight into the database, as another web process or the admin CLI would.
    with Session(quiz_client.app.state.engine) as session:
        interview = date.today() + timedelta(days=30)
        session.add(StudyGoal(user_id=1, interview_date=interview, minutes_per_day=30))
        session.commit()
    page = quiz_client.get("/").text
    assert 'id="set-a-date"' not in page and interview.isoformat() in page


def test_a_kept_dashboard_goes_when_a_review_falls_due(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    due = datetime.now(UTC) + timedelta(seconds=1.5)
    card = Card(card_id=1, state=State.Review, step=None, stability=5.0, difficulty=5.0,
                due=due, last_review=datetime.now(UTC))  # fmt: skip
    with Session(quiz_client.app.state.engine) as session:
        session.add(ItemState(user_id=1, item_id=STUDY_ORDER[0], fsrs_card=card.to_dict(), due=due))
        session.commit()
    assert stat(quiz_client.get("/").text, "due") == "0"
    with route_reads(quiz_client) as seen:
        assert stat(quiz_client.get("/").text, "due") == "0"
    assert seen == []
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.1)
    assert stat(quiz_client.get("/").text, "due") == "1"


def test_learners_each_see_their_own_kept_dashboard(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    assert answer(quiz_client, "fx-numeric", answer="3 B").status_code == 200  # wrong
    assert stat(quiz_client.get("/").text, "right") == "0%"
    quiz_client.cookies.clear()
    register(quiz_client, "bob")
    page = quiz_client.get("/").text
    assert "Welcome back, bob" in page and stat(page, "right") == "–"


def test_every_write_to_a_learners_progress_moves_their_version(
    quiz_client: TestClient,
) -> None:
    register(quiz_client, "ada")
    register(TestClient(quiz_client.app), "bob")
    now = datetime.now(UTC)
    rows = [
        QuizAttempt(user_id=1, item_id="fx-single", kind="single", question_params={},
                    prompt="p", answer=None, expected=None, answer_text="", unit="",
                    correct=True, rating=3, created_at=now),
        ItemState(user_id=1, item_id="fx-single", fsrs_card=Card(card_id=1).to_dict(), due=now),
        ItemMark(user_id=1, item_id="fx-single", suspended=True),
        ReviewSettings(user_id=1, new_per_day=5),
        MockInterview(user_id=1, questions=[], time_limit_s=60),
        DesignAttempt(user_id=1, scenario=0, layout={}, score=1.0, verdict="fits", rules=[]),
        StudyGoal(user_id=1, interview_date=now.date(), minutes_per_day=30),
        CardVisit(user_id=1, page="/cards/x"),
    ]  # fmt: skip
    engine = quiz_client.app.state.engine
    for row in rows:
        table = type(row)
        with Session(engine) as session:
            before = version(quiz_client)
            session.add(row)
            session.commit()
            assert version(quiz_client) > before, f"insert into {table.__name__}"
            before = version(quiz_client)
            session.exec(update(table).values(user_id=1))  # an update, changing nothing
            session.commit()
            assert version(quiz_client) > before, f"update of {table.__name__}"
            before = version(quiz_client)
            session.exec(delete(table).where(col(table.user_id) == 1))  # a bulk delete
            session.commit()
            assert version(quiz_client) > before, f"delete from {table.__name__}"
    with Session(engine) as session:
        bob = session.exec(select(User).where(User.username == "bob")).one()
        assert bob.progress_version == 0  # the other learner's number never moved
