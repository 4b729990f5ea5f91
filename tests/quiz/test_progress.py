"""FSRS state through SQLite, the progress page, export and import of one's own progress."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from fsrs import Card, Rating
from sqlmodel import Session, select

from app.accounts.models import User
from app.quiz.bank import QuestionBank
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.progress import streak_days
from app.quiz.scheduling import review
from app.quiz.service import Outcome, question_for, record_answer
from tests.quiz.conftest import FIXTURE_CONTENT
from tests.quiz.test_review import RIGHT, answer
from tests.utils import log_out, register

BANK = QuestionBank.load(FIXTURE_CONTENT / "quiz")


def test_fsrs_state_round_trips_through_the_database(quiz_client: TestClient) -> None:
    register(quiz_client)
    engine = quiz_client.app.state.engine
    t0 = datetime(2026, 1, 1, 9, tzinfo=UTC)
    question = question_for(BANK.get("fx-flash"))
    with Session(engine) as session:
        user = session.exec(select(User)).one()
        record_answer(session, user, question, Outcome(True, Rating.Good), now=t0)
        t1 = t0 + timedelta(days=3)
        record_answer(session, user, question, Outcome(True, Rating.Good), now=t1)
    with Session(engine) as session:  # a fresh session: read back from the file
        state = session.exec(select(ItemState)).one()
        stored = Card.from_dict(state.fsrs_card)
    # The same two reviews in memory give the same card, to the last field.
    expected = review(review(Card(card_id=stored.card_id, due=t0), Rating.Good, t0),
                      Rating.Good, t1)  # fmt: skip
    assert stored.to_dict() == expected.to_dict()
    assert state.due == expected.due and state.reviews == 2 and state.lapses == 0
    assert stored.stability and stored.stability > 0


def test_streak_counts_consecutive_days_up_to_today_or_yesterday() -> None:
    today = datetime(2026, 3, 10).date()
    days = {today - timedelta(days=d) for d in (1, 2, 3, 5)}
    assert streak_days(days, today) == 3
    assert streak_days(days | {today}, today) == 4
    assert streak_days({today - timedelta(days=2)}, today) == 0


def test_progress_page_shows_mastery_due_counts_and_the_next_due_date(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", option="0")
    answer(quiz_client, "fx-numeric", answer="3")  # wrong: Again
    page = quiz_client.get("/progress").text
    assert "1 of 2 correct" in page
    assert 'data-card="memory-anatomy"' in page and "2 / 2" in page
    assert 'id="next-due"><time datetime=' in page
    assert 'id="streak">1</span><span class="stat-label">day streak<' in page
    assert 'id="answer-count">1 of 2 correct<' in page and ">50%<" in page
    assert "data-history=" in page
    # The weakest item is named by its question, not its id.
    assert '<span class="weak-question" data-item="fx-numeric">Bytes per parameter' in page


def _export(client: TestClient) -> dict:
    response = client.get("/progress/export")
    assert response.status_code == 200
    assert response.headers["content-disposition"].startswith("attachment")
    return response.json()


def test_export_then_import_into_another_account_and_again_adds_nothing_twice(
    quiz_client: TestClient,
) -> None:
    register(quiz_client, "ada")
    for item_id in ("fx-single", "fx-generated"):
        answer(quiz_client, item_id, **RIGHT[item_id])
    exported = _export(quiz_client)
    assert exported["format"] == "shardlab-progress" and len(exported["attempts"]) == 2
    log_out(quiz_client)
    register(quiz_client, "bob")
    upload = {"file": ("p.json", json.dumps(exported), "application/json")}
    first = quiz_client.post("/progress/import", files=upload)
    assert first.status_code == 200 and "2 answers added, 2 item schedules updated" in first.text
    again = quiz_client.post("/progress/import", files=upload)
    assert "0 answers added, 0 item schedules updated" in again.text
    mine = _export(quiz_client)
    assert mine["states"] == exported["states"]
    assert [a["created_at"] for a in mine["attempts"]] == [
        a["created_at"] for a in exported["attempts"]
    ]


def test_a_bad_import_is_a_friendly_422_and_changes_nothing(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", option="0")
    before = _export(quiz_client)
    good = dict(before)
    broken_card = {**before["states"][0], "fsrs_card": {"due": "soon"}}
    for body, message in [
        (b"not json at all", "not a JSON file exported by ShardLab"),
        (b'{"format": "other"}', "format"),
        (json.dumps({**good, "states": [broken_card]}).encode(), "not an FSRS card"),
        (json.dumps({**good, "attempts": [{"item_id": "x"}]}).encode(), "attempts.0"),
    ]:
        response = quiz_client.post("/progress/import", files={"file": ("p.json", body)})
        assert response.status_code == 422, body
        assert "nothing changed" in response.text and message in response.text
    missing = quiz_client.post("/progress/import", data={"x": "1"})
    assert missing.status_code == 422 and "choose a file" in missing.text
    after = _export(quiz_client)
    assert after["states"] == before["states"] and after["attempts"] == before["attempts"]
    with Session(quiz_client.app.state.engine) as session:
        assert len(session.exec(select(QuizAttempt)).all()) == 1
