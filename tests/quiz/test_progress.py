"""FSRS state through SQLite, the progress page, export and import of one's own progress."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from fsrs import Card, Rating, State
from sqlmodel import Session, delete, select

from app.accounts.models import User
from app.journey.models import StudyGoal
from app.journey.plan import plan_study
from app.quiz.bank import QuestionBank
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.progress import DueReviews, due_reviews, streak_days, unchanged_until
from app.quiz.progress_file import MAX_STATES
from app.quiz.scheduling import recall_probability, review
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


def test_import_messages_are_in_the_readers_language(quiz_client: TestClient) -> None:
    register(quiz_client)
    bad = quiz_client.post("/progress/import?lang=zh", files={"file": ("p.json", b"nope")})
    assert bad.status_code == 422 and "这不是 ShardLab 导出的 JSON 文件" in bad.text
    exported = _export(quiz_client)
    body = json.dumps(exported).encode()
    done = quiz_client.post("/progress/import?lang=zh", files={"file": ("p.json", body)})
    assert done.status_code == 200 and "已导入" in done.text and "Imported" not in done.text


def _set_goal(client: TestClient, interview: date, minutes: int) -> None:
    data = {"interview_date": interview.isoformat(), "minutes_per_day": str(minutes)}
    assert client.post("/plan", data=data).status_code == 200


def _goal(client: TestClient, username: str) -> StudyGoal | None:
    with Session(client.app.state.engine) as session:
        user = session.exec(select(User).where(User.username == username)).one()
        return session.exec(select(StudyGoal).where(StudyGoal.user_id == user.id)).first()


def _import(client: TestClient, data: dict) -> str:
    response = client.post("/progress/import", files={"file": ("p.json", json.dumps(data))})
    assert response.status_code == 200, response.text
    return response.text


def test_the_study_goal_round_trips_and_never_replaces_a_newer_one(
    quiz_client: TestClient,
) -> None:
    interview = datetime.now(UTC).date() + timedelta(days=40)
    register(quiz_client, "ada")
    _set_goal(quiz_client, interview, 45)
    exported = _export(quiz_client)
    assert exported["version"] == 2
    assert exported["goal"]["interview_date"] == interview.isoformat()
    assert exported["goal"]["minutes_per_day"] == 45
    log_out(quiz_client)
    register(quiz_client, "bob")
    assert "Study goal restored" in _import(quiz_client, exported)
    bob = _goal(quiz_client, "bob")
    assert bob and (bob.interview_date, bob.minutes_per_day) == (interview, 45)
    assert _export(quiz_client)["goal"] == exported["goal"]
    assert "Study goal restored" not in _import(quiz_client, exported)
    # A goal set after the export is the learner's latest word: the file does not undo it.
    _set_goal(quiz_client, interview + timedelta(days=7), 90)
    assert "Study goal restored" not in _import(quiz_client, exported)
    bob = _goal(quiz_client, "bob")
    assert bob and (bob.interview_date, bob.minutes_per_day) == (interview + timedelta(days=7), 90)


def test_a_version_1_file_without_a_goal_imports_and_keeps_the_goal(
    quiz_client: TestClient,
) -> None:
    interview = datetime.now(UTC).date() + timedelta(days=20)
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    old = {k: v for k, v in _export(quiz_client).items() if k != "goal"} | {"version": 1}
    _set_goal(quiz_client, interview, 30)
    with Session(quiz_client.app.state.engine) as session:
        session.exec(delete(QuizAttempt))
        session.commit()
    assert "1 answers added" in _import(quiz_client, old)
    goal = _goal(quiz_client, "ada")
    assert goal and (goal.interview_date, goal.minutes_per_day) == (interview, 30)


def test_a_malformed_goal_is_a_422_and_changes_nothing(quiz_client: TestClient) -> None:
    interview = datetime.now(UTC).date() + timedelta(days=20)
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    _set_goal(quiz_client, interview, 30)
    before = _export(quiz_client)
    goal = before["goal"]
    later = {"updated_at": (datetime.now(UTC) + timedelta(days=1)).isoformat()}
    for bad, message in [
        ({**goal, **later, "minutes_per_day": 5}, "goal.minutes_per_day"),
        ({**goal, **later, "interview_date": "soon"}, "goal.interview_date"),
        ({**goal, "updated_at": "2026-01-01T00:00:00"}, "goal.updated_at"),
        ({"interview_date": goal["interview_date"]}, "goal.minutes_per_day"),
        ({**goal, "hours": 2}, "goal.hours"),
        ("2026-12-01", "goal"),
    ]:
        body = json.dumps({**before, "attempts": [], "goal": bad}).encode()
        response = quiz_client.post("/progress/import", files={"file": ("p.json", body)})
        assert response.status_code == 422, bad
        assert "nothing changed" in response.text and message in response.text, bad
    after = _export(quiz_client)
    assert after["goal"] == before["goal"] and after["attempts"] == before["attempts"]


def test_reviews_due_by_the_end_of_today_include_those_due_now_as_the_plan_counts() -> None:
    now = datetime(2026, 3, 10, 12, tzinfo=UTC)
    dues = [now - timedelta(days=2), now, now + timedelta(hours=11, minutes=59),
            now + timedelta(hours=12)]  # fmt: skip
    states = [
        ItemState(user_id=1, item_id=f"i{n}", fsrs_card={}, due=d) for n, d in enumerate(dues)
    ]
    assert due_reviews(states, now) == DueReviews(now=2, by_end_of_today=3)
    plan = plan_study(now.date(), now.date() + timedelta(days=30), 60, [], [d.date() for d in dues])
    assert plan.days[0].reviews == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"last_review": "2026-11-01T10:00:00"}, "last_review needs a time zone"),
        ({"stability": -3.0}, "stability must be a positive number"),
        ({"stability": "nan"}, "stability must be a positive number"),
        ({"difficulty": -1.0}, "difficulty must be between 1 and 10"),
        ({"difficulty": 11.5}, "difficulty must be between 1 and 10"),
        ({"step": 1.5}, "step must be a whole number"),
        ({"step": -1}, "step must be a whole number"),
        ({"state": 7}, "not an FSRS card"),
    ],
)
def test_a_crafted_schedule_is_refused_before_it_can_break_the_pages(
    quiz_client: TestClient, change: dict[str, object], message: str
) -> None:
    # Issue #25, finding 7: such a card was imported and then every page that reads the
    # schedule (/, /progress, answering) answered 500 for good.
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    exported = _export(quiz_client)
    state = exported["states"][0]
    crafted = {**state, "fsrs_card": {**state["fsrs_card"], **change}}
    body = json.dumps({**exported, "states": [crafted]})
    response = quiz_client.post("/progress/import", files={"file": ("p.json", body)})
    assert response.status_code == 422 and message in response.text
    for page in ("/", "/progress", "/quiz"):
        assert quiz_client.get(page).status_code == 200
    assert answer(quiz_client, "fx-single", **RIGHT["fx-single"]).status_code == 200


def test_an_import_of_too_many_schedules_is_refused(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    exported = _export(quiz_client)
    many = [{**exported["states"][0], "item_id": f"made-up-{i}"} for i in range(MAX_STATES + 1)]
    body = json.dumps({**exported, "states": many})
    response = quiz_client.post("/progress/import", files={"file": ("p.json", body)})
    assert response.status_code == 422 and "states" in response.text


def test_imports_are_rate_limited(quiz_client: TestClient) -> None:
    # Issue #25, finding 6: imports had no rate limit. Ten an hour per user and address.
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    upload = {"file": ("p.json", json.dumps(_export(quiz_client)), "application/json")}
    for _ in range(10):
        assert quiz_client.post("/progress/import", files=upload).status_code == 200
    limited = quiz_client.post("/progress/import", files=upload)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 60
    assert "Too many progress imports" in limited.text


def _reviewed(last_review: datetime, due: datetime) -> ItemState:
    """An item in FSRS's review state, last reviewed and due when given."""
    card = Card(card_id=1, state=State.Review, step=None, stability=5.0, difficulty=5.0,
                due=due, last_review=last_review)  # fmt: skip
    return ItemState(user_id=1, item_id="x", fsrs_card=card.to_dict(), due=due)


def test_progress_is_unchanged_until_a_review_falls_due_midnight_or_a_recall_step() -> None:
    now = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)
    midnight = datetime(2026, 11, 30, tzinfo=UTC)
    far = now + timedelta(days=20)
    assert unchanged_until([], now) == midnight
    # py-fsrs counts whole days since the last review: reviewed at 05:00 three days ago, the
    # recall a week ahead steps every day at 05:00; from 09:30 the next step is 05:00
    # tomorrow, after midnight; from 01:00 it is 05:00 the same day.
    at_five = _reviewed(datetime(2026, 11, 26, 5, tzinfo=UTC), far)
    assert unchanged_until([at_five], now) == midnight
    small_hours = datetime(2026, 11, 29, 1, tzinfo=UTC)
    assert unchanged_until([at_five], small_hours) == datetime(2026, 11, 29, 5, tzinfo=UTC)
    assert recall_probability(at_five.fsrs_card, small_hours + timedelta(days=7)) != (
        recall_probability(
            at_five.fsrs_card, datetime(2026, 11, 29, 5, 1, tzinfo=UTC) + timedelta(days=7)
        )
    )
    # The first item to fall due ends it too; one due already does not.
    soon = _reviewed(datetime(2026, 11, 29, 9, 15, tzinfo=UTC), now + timedelta(minutes=10))
    overdue = _reviewed(datetime(2026, 11, 20, 9, 45, tzinfo=UTC), now - timedelta(hours=1))
    assert unchanged_until([at_five, soon, overdue], now) == now + timedelta(minutes=10)
    # A review stamped at the calendar's end (an import may hold one) has no next step.
    last_day = _reviewed(datetime.max.replace(tzinfo=UTC) - timedelta(hours=1), far)
    assert unchanged_until([last_day], now) == midnight
    # A card never reviewed has no recall to step.
    fresh = Card(card_id=2, due=far)
    new = ItemState(user_id=1, item_id="y", fsrs_card=fresh.to_dict(), due=far)
    assert unchanged_until([new], now) == midnight
