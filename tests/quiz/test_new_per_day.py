"""The daily limit of new items as the learner's setting (#29): set on /progress within 0..200,
refused input is a 422 that keeps what was typed, the daily review follows it, and it travels
in the progress file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.accounts.models import User
from app.quiz.models import ReviewSettings
from app.quiz.review_queue import NEW_PER_DAY, new_left_today, new_per_day_of, set_new_per_day
from tests.quiz.conftest import shown_item
from tests.quiz.test_review import RIGHT, STUDY_ORDER, answer
from tests.quiz.test_review_results import bar
from tests.utils import log_out, register


def _save(client: TestClient, value: object) -> object:
    return client.post("/progress/settings", data={"new_per_day": value}, follow_redirects=False)


def _shown_value(page: str) -> str:
    match = re.search(r'<input name="new_per_day"[^>]*value="([^"]*)"', page)
    assert match, page[:3000]
    return match.group(1)


def _saved(client: TestClient) -> int:
    with Session(client.app.state.engine) as session:
        user_id = session.exec(select(User.id)).first()
        assert user_id is not None
        return new_per_day_of(session, user_id)


def test_the_progress_page_shows_the_default_then_the_saved_value(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    page = quiz_client.get("/progress").text
    assert _shown_value(page) == str(NEW_PER_DAY) == "20"
    assert 'min="0" max="200"' in page
    assert "Today's review may still bring in 20 new questions." in page
    saved = _save(quiz_client, "7")
    assert saved.status_code == 303 and saved.headers["location"] == "/progress#review-settings"
    page = quiz_client.get("/progress").text
    assert _shown_value(page) == "7"
    assert "Today's review may still bring in 7 new questions." in page
    assert _saved(quiz_client) == 7


@pytest.mark.parametrize("value", ["0", "200"])
def test_both_bounds_are_accepted(quiz_client: TestClient, value: str) -> None:
    register(quiz_client)
    assert _save(quiz_client, value).status_code == 303
    assert _saved(quiz_client) == int(value)


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        ({"new_per_day": "-1"}, "New cards per day: must be at least 0"),
        ({"new_per_day": "201"}, "New cards per day: must be at most 200"),
        ({"new_per_day": "lots"}, "New cards per day: must be a whole number"),
        ({"new_per_day": "2.5"}, "New cards per day: must be a whole number"),
        ({"new_per_day": ""}, "New cards per day: is required"),
        ({}, "New cards per day: is required"),
    ],
)
def test_bad_input_is_a_422_that_keeps_the_value_typed_and_the_setting(
    quiz_client: TestClient, sent: dict, message: str
) -> None:
    register(quiz_client)
    assert _save(quiz_client, "12").status_code == 303
    response = quiz_client.post("/progress/settings", data=sent)
    assert response.status_code == 422
    assert message in response.text and 'aria-invalid="true"' in response.text
    assert _shown_value(response.text) == sent.get("new_per_day", "")
    assert 'id="summary"' in response.text  # the whole page, not an error page
    assert _saved(quiz_client) == 12


def test_each_learner_has_their_own_setting(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    _save(quiz_client, "3")
    log_out(quiz_client)
    register(quiz_client, "bob")
    assert _shown_value(quiz_client.get("/progress").text) == "20"


def test_zero_new_per_day_means_a_review_of_due_items_only(quiz_client: TestClient) -> None:
    register(quiz_client)
    _save(quiz_client, "0")
    page = quiz_client.get("/quiz").text
    assert 'id="all-done"' in page
    # Practice is not capped.
    assert shown_item(quiz_client.get("/quiz?mode=practice").text) == STUDY_ORDER[0]


def test_the_review_brings_in_as_many_new_items_as_set(quiz_client: TestClient) -> None:
    register(quiz_client)
    _save(quiz_client, "2")
    page = quiz_client.get("/quiz").text
    assert bar(page) == (0, 2, "0 due, 2 new to go")
    for item_id in STUDY_ORDER[:2]:
        assert shown_item(quiz_client.get("/quiz").text) == item_id
        answer(quiz_client, item_id, **RIGHT[item_id])
    assert 'id="all-done"' in quiz_client.get("/quiz").text
    # Raised later the same day, the review brings in the difference.
    _save(quiz_client, "3")
    assert shown_item(quiz_client.get("/quiz").text) == STUDY_ORDER[2]


def test_new_left_today_counts_down_from_the_setting(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    now = datetime.now(UTC)
    with Session(quiz_client.app.state.engine) as session:
        user_id = session.exec(select(User.id)).one()
        assert new_left_today(session, user_id, now) == NEW_PER_DAY - 1
        set_new_per_day(session, user_id, 4)
        assert new_left_today(session, user_id, now) == 3
        set_new_per_day(session, user_id, 1)
        assert new_left_today(session, user_id, now) == 0
        set_new_per_day(session, user_id, 0)
        assert new_left_today(session, user_id, now) == 0
        assert new_left_today(session, user_id, now + timedelta(days=1)) == 0
        assert len(session.exec(select(ReviewSettings)).all()) == 1


def _export(client: TestClient) -> dict:
    response = client.get("/progress/export")
    assert response.status_code == 200
    return response.json()


def _import(client: TestClient, data: dict) -> object:
    return client.post("/progress/import", files={"file": ("p.json", json.dumps(data))})


def test_the_setting_travels_in_the_progress_file_and_never_replaces_a_newer_one(
    quiz_client: TestClient,
) -> None:
    register(quiz_client, "ada")
    assert _export(quiz_client)["review_settings"] is None  # the defaults: nothing to carry
    _save(quiz_client, "35")
    exported = _export(quiz_client)
    assert exported["version"] == 2 and exported["review_settings"]["new_per_day"] == 35
    log_out(quiz_client)
    register(quiz_client, "bob")
    done = _import(quiz_client, exported)
    assert done.status_code == 200 and "New cards per day restored." in done.text
    assert _shown_value(done.text) == "35"
    assert "New cards per day restored." not in _import(quiz_client, exported).text
    # A value set after the export is the learner's latest word: the file does not undo it.
    _save(quiz_client, "9")
    assert "New cards per day restored." not in _import(quiz_client, exported).text
    assert _shown_value(quiz_client.get("/progress").text) == "9"


def test_a_file_without_the_setting_imports_and_keeps_it(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", **RIGHT["fx-single"])
    old = {k: v for k, v in _export(quiz_client).items() if k != "review_settings"}
    _save(quiz_client, "6")
    done = _import(quiz_client, old)
    assert done.status_code == 200 and "Imported" in done.text
    assert _shown_value(done.text) == "6"


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"new_per_day": 201}, "review_settings.new_per_day"),
        ({"new_per_day": -1}, "review_settings.new_per_day"),
        ({"new_per_day": "many"}, "review_settings.new_per_day"),
        ({"new_per_day": 5}, "review_settings.updated_at"),
        ({"new_per_day": 5, "updated_at": "2026-01-01T00:00:00"}, "review_settings.updated_at"),
        ({"new_per_day": 5, "updated_at": "2026-01-01T00:00:00Z", "x": 1}, "review_settings.x"),
    ],
)
def test_a_malformed_setting_is_a_422_and_changes_nothing(
    quiz_client: TestClient, bad: dict, where: str
) -> None:
    register(quiz_client)
    _save(quiz_client, "8")
    before = _export(quiz_client)
    response = _import(quiz_client, {**before, "review_settings": bad})
    assert response.status_code == 422
    assert "nothing changed" in response.text and where in response.text
    after = _export(quiz_client)
    assert after["review_settings"] == before["review_settings"]
    assert after["attempts"] == before["attempts"] and after["states"] == before["states"]
