"""Progress files the import took and then failed on with a 500 (issue #25, found by
tests/security/test_import_fuzz.py): each is now refused by name, or taken whole."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.quiz.models import ItemState
from app.quiz.stored_cards import checked_card, repaired_card
from tests.quiz.test_review import RIGHT, answer
from tests.utils import register

# A moment of year 9999 west of Greenwich, or of year 1 east of it, is past the calendar in
# UTC, where the database keeps times.
LATE = "9999-12-31T23:59:59-14:00"
EARLY = "0001-01-01T00:00:00+14:00"


def _export(client: TestClient) -> dict:
    response = client.get("/progress/export")
    assert response.status_code == 200
    return response.json()


def _progress(client: TestClient) -> dict:
    return {k: v for k, v in _export(client).items() if k != "exported_at"}


def _learner_with_an_answer(client: TestClient) -> dict:
    register(client)
    answer(client, "fx-single", **RIGHT["fx-single"])
    exported = _export(client)
    exported["goal"] = {"interview_date": "2030-01-01", "minutes_per_day": 30,
                        "updated_at": datetime.now(UTC).isoformat()}  # fmt: skip
    return exported


def _refused(client: TestClient, document: dict, where: str) -> None:
    before = _progress(client)
    body = json.dumps(document)
    response = client.post("/progress/import", files={"file": ("p.json", body)})
    assert response.status_code == 422, response.text[-2000:]
    assert f"<li>{where}: " in response.text, response.text[-2000:]
    assert _progress(client) == before
    for page in ("/", "/progress", "/quiz/browse"):
        assert client.get(page).status_code == 200


@pytest.mark.parametrize("moment", [LATE, EARLY])
@pytest.mark.parametrize(
    ("place", "where"),
    [
        (("goal", "updated_at"), "goal.updated_at"),
        (("attempts", 0, "created_at"), "attempts.0.created_at"),
        (("exported_at",), "exported_at"),
        (("states", 0, "fsrs_card", "due"), "states.0.fsrs_card"),
        (("states", 0, "fsrs_card", "last_review"), "states.0.fsrs_card"),
    ],
)
def test_a_time_off_the_calendar_in_utc_is_refused_by_name(
    quiz_client: TestClient, moment: str, place: tuple, where: str
) -> None:
    document = _learner_with_an_answer(quiz_client)
    holder = document
    for key in place[:-1]:
        holder = holder[key]
    holder[place[-1]] = moment
    _refused(quiz_client, document, where)


@pytest.mark.parametrize(
    ("place", "where"),
    [
        (("attempts", 0, "duration_ms"), "attempts.0.duration_ms"),
        (("states", 0, "reviews"), "states.0.reviews"),
        (("states", 0, "lapses"), "states.0.lapses"),
    ],
)
def test_a_count_past_what_sqlite_holds_is_refused_by_name(
    quiz_client: TestClient, place: tuple, where: str
) -> None:
    document = _learner_with_an_answer(quiz_client)
    document[place[0]][place[1]][place[2]] = 2**63
    _refused(quiz_client, document, where)


def test_a_wrong_scenario_is_named_where_it_is(quiz_client: TestClient) -> None:
    document = _learner_with_an_answer(quiz_client)
    document["designs"] = [{"scenario": -1, "layout": {"dp": 8}, "score": 0.5,
                            "verdict": "partial", "rules": [],
                            "created_at": datetime.now(UTC).isoformat()}]  # fmt: skip
    _refused(quiz_client, document, "designs.0.scenario")


def test_an_item_named_twice_in_one_file_gets_one_schedule_the_later_one(
    quiz_client: TestClient,
) -> None:
    document = _learner_with_an_answer(quiz_client)
    state = {**document["states"][0], "item_id": "fx-numeric"}  # not yet scheduled here
    later = {**state["fsrs_card"], "last_review": "2099-01-01T00:00:00+00:00"}
    document["states"] = [state, {**state, "fsrs_card": later, "reviews": 7}, state]
    body = json.dumps(document)
    response = quiz_client.post("/progress/import", files={"file": ("p.json", body)})
    assert response.status_code == 200, response.text[-2000:]
    assert "1 item schedules updated" in response.text
    with Session(quiz_client.app.state.engine) as session:
        stored = session.exec(select(ItemState).where(ItemState.item_id == "fx-numeric")).all()
    assert [(s.reviews, s.fsrs_card["last_review"]) for s in stored] == [
        (7, "2099-01-01T00:00:00+00:00")
    ]


@pytest.mark.parametrize("field", ["due", "last_review"])
def test_a_stored_card_off_the_calendar_is_refused_and_read_as_utc(field: str) -> None:
    card = {"card_id": 1, "state": 2, "step": None, "stability": 3.0, "difficulty": 5.0,
            "due": "2030-01-01T00:00:00+00:00", "last_review": "2029-12-01T00:00:00+00:00",
            field: LATE}  # fmt: skip
    with pytest.raises(ValueError, match=f"{field}.* off the calendar"):
        checked_card(card)
    repaired = repaired_card(card, card_id=1, now=datetime.now(UTC))
    assert getattr(repaired.card, field) == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    checked_card(repaired.card.to_dict())
