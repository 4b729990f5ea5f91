"""Undoing an answer (#29): the attempt goes, the item's FSRS state comes back exactly as it
was (or goes, after a first answer), and the same question is asked again; only the learner's
own latest answer, outside a mock interview, within ten minutes; anything else is a 422."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from fastapi.testclient import TestClient
from fsrs import Rating
from sqlalchemy import inspect
from sqlmodel import Session, select

from app.accounts.models import User
from app.db import alembic_config, make_engine
from app.quiz.models import ItemState, MockInterview, QuizAttempt
from app.quiz.service import (
    UNDO_WITHIN,
    CannotUndo,
    Outcome,
    question_for,
    record_answer,
    undo_answer,
)
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_out, register

GENERATED_INPUTS = {"params": 7.5e9, "dp_degree": 64, "zero_stage": 2}


def _state(client: TestClient, item_id: str) -> dict | None:
    """The item's stored state, every field undo must put back, read from the file afresh."""
    with Session(client.app.state.engine) as session:
        state = session.exec(select(ItemState).where(ItemState.item_id == item_id)).first()
        if state is None:
            return None
        return {"fsrs_card": state.fsrs_card, "due": state.due, "reviews": state.reviews,
                "lapses": state.lapses, "updated_at": state.updated_at}  # fmt: skip


def _attempt_ids(client: TestClient) -> list[int]:
    with Session(client.app.state.engine) as session:
        return [a.id for a in session.exec(select(QuizAttempt).order_by(QuizAttempt.id))]


def _undo(client: TestClient, attempt_id: object, mode: str = "review") -> object:
    return client.post("/quiz/undo", data={"attempt_id": str(attempt_id), "mode": mode})


def _answered(client: TestClient, item_id: str, **fields: object) -> int:
    """Answers the item; the new attempt's id, read from the Undo form of the result."""
    result = answer(client, item_id, **fields)
    assert result.status_code == 200, result.text
    match = re.search(r'name="attempt_id" value="(\d+)"', result.text)
    assert match, result.text[:3000]
    return int(match.group(1))


def test_the_result_offers_undo_for_this_answer(quiz_client: TestClient) -> None:
    register(quiz_client)
    attempt_id = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    assert _attempt_ids(quiz_client) == [attempt_id]
    result = answer(quiz_client, "fx-numeric", answer="16 B").text
    form = re.search(r'<form method="post" action="/quiz/undo".*?</form>', result, re.S)
    assert form and 'name="csrf_token" value="' in form.group(0)
    assert ">Undo</button>" in form.group(0) and "within 10 minutes" in form.group(0)


def test_undoing_a_second_answer_gives_back_the_first_answers_state(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    _answered(quiz_client, "fx-generated", **{**RIGHT["fx-generated"], "answer": "3"})  # Again
    after_first = _state(quiz_client, "fx-generated")
    assert after_first and after_first["reviews"] == 1 and after_first["lapses"] == 1
    second = _answered(quiz_client, "fx-generated", **RIGHT["fx-generated"])
    assert _state(quiz_client, "fx-generated") != after_first

    page = _undo(quiz_client, second)
    assert page.status_code == 200, page.text
    assert _state(quiz_client, "fx-generated") == after_first
    assert len(_attempt_ids(quiz_client)) == 1
    # The same question again, with the same drawn inputs, ready to answer; no result yet.
    assert shown_item(page.text) == "fx-generated"
    inputs = re.findall(r'name="(in_\w+)" value="([^"]+)"', page.text)
    assert {name: float(value) for name, value in inputs} == {
        name: float(value) for name, value in RIGHT["fx-generated"].items() if name != "answer"
    }
    assert 'id="result"' not in page.text and 'action="/quiz/answer"' in page.text
    # It is answered again as if the second answer had never been given.
    answer(quiz_client, "fx-generated", **RIGHT["fx-generated"])
    assert _state(quiz_client, "fx-generated")["reviews"] == 2  # type: ignore[index]


def test_undoing_a_first_answer_leaves_no_state_and_the_item_new(quiz_client: TestClient) -> None:
    register(quiz_client)
    attempt_id = _answered(quiz_client, "fx-single", option="1")  # wrong
    page = _undo(quiz_client, attempt_id)
    assert page.status_code == 200, page.text
    assert _state(quiz_client, "fx-single") is None and _attempt_ids(quiz_client) == []
    assert shown_item(page.text) == "fx-single"
    assert '<p class="status-line">\n    New\n' in page.text
    # The review counts it as new again: nothing answered today.
    assert 'data-done="0" data-total="5"' in page.text


def test_answers_can_be_undone_one_after_another_back_to_nothing(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    first = _answered(quiz_client, "fx-flash", rating="3")
    second = _answered(quiz_client, "fx-flash", rating="1")
    assert _undo(quiz_client, second).status_code == 200
    page = _undo(quiz_client, first)
    assert page.status_code == 200, page.text
    assert _state(quiz_client, "fx-flash") is None and _attempt_ids(quiz_client) == []
    assert shown_item(page.text) == "fx-flash" and 'class="interval"' in page.text


def _refused(client: TestClient, attempt_id: object, message: str) -> None:
    before = (_attempt_ids(client), _state(client, "fx-single"), _state(client, "fx-numeric"))
    response = _undo(client, attempt_id)
    assert response.status_code == 422, response.text
    assert message in response.text and 'role="alert"' in response.text
    after = (_attempt_ids(client), _state(client, "fx-single"), _state(client, "fx-numeric"))
    assert after == before


def test_someone_elses_answer_cannot_be_undone(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    adas = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    log_out(quiz_client)
    register(quiz_client, "bob")
    _refused(quiz_client, adas, "there is no such answer of yours")


def test_only_the_latest_answer_can_be_undone(quiz_client: TestClient) -> None:
    register(quiz_client)
    older = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    _answered(quiz_client, "fx-numeric", answer="16 B")
    _refused(quiz_client, older, "only your latest answer can be undone")


def test_an_answer_undone_already_or_no_answer_at_all_is_a_422(quiz_client: TestClient) -> None:
    register(quiz_client)
    attempt_id = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    assert _undo(quiz_client, attempt_id).status_code == 200
    for sent in (attempt_id, "", "abc", "-1", "9" * 40):  # twice; missing; not an id; too big
        _refused(quiz_client, sent, "there is no such answer of yours")


def _record(client: TestClient, item_id: str, now: datetime, mock_id: int | None = None) -> int:
    """Records a right answer to a fixture item for the logged-in user at `now`."""
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User)).one()
        inputs = GENERATED_INPUTS if item_id == "fx-generated" else None
        question = question_for(client.app.state.quiz.get(item_id), inputs)
        attempt, _ = record_answer(session, user, question, Outcome(True, Rating.Good),
                                   mock_id=mock_id, now=now)  # fmt: skip
        assert attempt.id is not None
        return attempt.id


def test_a_mock_interview_answer_cannot_be_undone(quiz_client: TestClient) -> None:
    register(quiz_client)
    with Session(quiz_client.app.state.engine) as session:
        user = session.exec(select(User)).one()
        mock = MockInterview(user_id=user.id, questions=[], time_limit_s=600)
        session.add(mock)
        session.commit()
        mock_id = mock.id
    attempt_id = _record(quiz_client, "fx-single", datetime.now(UTC), mock_id=mock_id)
    _refused(quiz_client, attempt_id, "an answer in a mock interview cannot be undone")


def test_an_answer_older_than_ten_minutes_cannot_be_undone(quiz_client: TestClient) -> None:
    register(quiz_client)
    stale = _record(quiz_client, "fx-single", datetime.now(UTC) - timedelta(minutes=11))
    _refused(quiz_client, stale, "an answer can be undone for 10 minutes only")


def test_the_ten_minutes_run_from_the_answer(quiz_client: TestClient) -> None:
    register(quiz_client)
    answered_at = datetime(2026, 3, 2, 9, tzinfo=UTC)
    attempt_id = _record(quiz_client, "fx-generated", answered_at)
    with Session(quiz_client.app.state.engine) as session:
        user = session.exec(select(User)).one()
        with pytest.raises(CannotUndo, match="10 minutes only"):
            undo_answer(session, user, attempt_id, now=answered_at + UNDO_WITHIN
                        + timedelta(seconds=1))  # fmt: skip
        undone = undo_answer(session, user, attempt_id, now=answered_at + UNDO_WITHIN)
    assert undone.item_id == "fx-generated" and undone.state is None
    assert undone.question_params == GENERATED_INPUTS


def test_an_answer_from_before_undo_existed_cannot_be_undone(quiz_client: TestClient) -> None:
    # Such an answer kept no previous state (null, as for a first answer): deleting the item's
    # state would lose the answers before it.
    register(quiz_client)
    _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    second = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    with Session(quiz_client.app.state.engine) as session:
        attempt = session.get(QuizAttempt, second)
        assert attempt is not None and attempt.previous_state is not None
        attempt.previous_state = None
        session.add(attempt)
        session.commit()
    _refused(quiz_client, second, "schedule changed after that answer")


def test_a_state_replaced_since_the_answer_is_not_undone(quiz_client: TestClient) -> None:
    # An import replaces an item's state with a more recent one and stamps it: putting the
    # state from before the answer back would lose the imported reviews.
    register(quiz_client)
    attempt_id = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    with Session(quiz_client.app.state.engine) as session:
        state = session.exec(select(ItemState)).one()
        state.reviews, state.updated_at = 7, datetime.now(UTC) + timedelta(seconds=1)
        session.add(state)
        session.commit()
    _refused(quiz_client, attempt_id, "schedule changed after that answer")


def test_undo_needs_the_csrf_token(quiz_client: TestClient) -> None:
    register(quiz_client)
    attempt_id = _answered(quiz_client, "fx-single", **RIGHT["fx-single"])
    del quiz_client.headers["X-CSRF-Token"]
    assert _undo(quiz_client, attempt_id).status_code == 403
    assert _attempt_ids(quiz_client) == [attempt_id]


def test_the_migration_downgrades_and_upgrades_again(tmp_path: Path) -> None:
    """0009 adds previous_state and the review settings' table; its downgrade takes both away
    and keeps the answers."""
    url = f"sqlite:///{tmp_path / 'shardlab.sqlite'}"
    config = alembic_config(url)
    command.upgrade(config, "0009")

    def schema() -> tuple[set[str], set[str]]:
        engine = make_engine(url)
        try:
            found = inspect(engine)
            columns = {c["name"] for c in found.get_columns("quizattempt")}
            return set(found.get_table_names()), columns
        finally:
            engine.dispose()

    tables, columns = schema()
    assert "reviewsettings" in tables and "previous_state" in columns
    with sqlite3.connect(tmp_path / "shardlab.sqlite") as conn:
        conn.execute("INSERT INTO user (id, username, password_hash, created_at) "
                     "VALUES (1, 'ada', 'x', '2026-01-01 00:00:00')")  # fmt: skip
        conn.execute(
            "INSERT INTO quizattempt (user_id, item_id, kind, question_params, prompt, "
            "answer_text, unit, correct, created_at, previous_state) VALUES (1, 'fx-single', "
            "'single', '{}', 'p', '0', '', 1, '2026-01-01 00:00:00', NULL)"
        )
    conn.close()
    command.downgrade(config, "0008")
    tables, columns = schema()
    assert "reviewsettings" not in tables and "previous_state" not in columns
    command.upgrade(config, "head")
    with sqlite3.connect(tmp_path / "shardlab.sqlite") as conn:
        rows = conn.execute("SELECT item_id, previous_state FROM quizattempt").fetchall()
    conn.close()
    assert rows == [("fx-single", None)]
