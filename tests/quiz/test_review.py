"""A review session over HTTP on the fixture bank: each kind graded, recorded and scheduled;
due items first, then new ones in study order; bad input is a 422 that records nothing."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.quiz.models import ItemState, QuizAttempt
from tests.quiz.conftest import shown_item
from tests.utils import log_out, register

# What answers each fixture item right (form fields beyond item_id).
RIGHT = {
    "fx-single": {"option": "0"},
    "fx-numeric": {"answer": "16 B"},
    "fx-multiple": {"option": ["0", "1"]},
    "fx-generated": {
        "answer": "16.64",
        "in_params": "7500000000.0",
        "in_dp_degree": "64",
        "in_zero_stage": "2",
    },
    "fx-flash": {"rating": "3"},
}
STUDY_ORDER = ["fx-single", "fx-numeric", "fx-multiple", "fx-generated", "fx-flash"]


def answer(client: TestClient, item_id: str, **fields: object) -> object:
    data = {"item_id": item_id, "shown_at": str(int(time.time() * 1000)), **fields}
    return client.post("/quiz/answer", data=data, headers={"HX-Request": "true"})


def test_quiz_needs_a_login(quiz_client: TestClient) -> None:
    response = quiz_client.get("/quiz", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login?next=/quiz"


def test_a_review_serves_new_items_in_study_order_and_each_kind_is_recorded(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    served = []
    for _ in STUDY_ORDER:
        item_id = shown_item(quiz_client.get("/quiz").text)
        served.append(item_id)
        result = answer(quiz_client, item_id, **RIGHT[item_id])
        assert result.status_code == 200, result.text
        assert "Recorded." in result.text and 'class="next-due"' in result.text
    assert served == STUDY_ORDER
    # Everything answered right is scheduled later: nothing is due, nothing is new.
    assert 'id="all-done"' in quiz_client.get("/quiz").text
    progress = quiz_client.get("/progress").text
    assert "5 of 5 correct" in progress


def test_a_wrong_answer_comes_back_first(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-single", option="1")  # wrong: Again, due in a minute
    answer(quiz_client, "fx-numeric", answer="16")
    # Not due yet (a minute away), so a new item comes next ...
    assert shown_item(quiz_client.get("/quiz").text) == "fx-multiple"
    # ... and practice of that topic serves the lapsed item before the known one.
    page = quiz_client.get("/quiz?mode=practice&topic=memory-anatomy").text
    assert shown_item(page) == "fx-single"


def test_choice_feedback_explains_every_option(quiz_client: TestClient) -> None:
    register(quiz_client)
    result = answer(quiz_client, "fx-multiple", option="0").text
    assert "Not quite." in result
    assert "5 exponent bits, 10 mantissa bits." in result and "32 bits." in result
    assert result.count('data-correct="true"') == 2


def test_generated_answer_shows_the_worked_solution(quiz_client: TestClient) -> None:
    register(quiz_client)
    result = answer(quiz_client, "fx-generated", **RIGHT["fx-generated"]).text
    assert "Correct." in result and "16.64 GB" in result
    assert r"\frac{K\Psi}{N_d}" in result


def test_numeric_answer_accepts_another_unit_of_the_same_dimension(
    quiz_client: TestClient,
) -> None:
    register(quiz_client)
    fields = {**RIGHT["fx-generated"], "answer": "16640 MB"}
    assert "Correct." in answer(quiz_client, "fx-generated", **fields).text


def test_a_hint_makes_a_right_answer_hard(quiz_client: TestClient) -> None:
    register(quiz_client)
    answer(quiz_client, "fx-generated", hinted="1", **RIGHT["fx-generated"])
    engine = quiz_client.app.state.engine
    with Session(engine) as session:
        attempt = session.exec(select(QuizAttempt)).one()
    assert attempt.correct and attempt.rating == 2  # Hard


@pytest.mark.parametrize(
    ("item_id", "fields", "message"),
    [
        ("fx-numeric", {"answer": "sixteen"}, "type a number"),
        ("fx-numeric", {"answer": "16 ms"}, "in B"),
        ("fx-single", {}, "pick an option"),
        ("fx-single", {"option": ["0", "1"]}, "exactly one"),
        ("fx-single", {"option": "9"}, "not one of"),
        ("fx-flash", {"rating": "7"}, "rate yourself"),
    ],
)
def test_bad_answers_are_a_422_and_record_nothing(
    quiz_client: TestClient, item_id: str, fields: dict, message: str
) -> None:
    register(quiz_client)
    response = answer(quiz_client, item_id, **fields)
    assert response.status_code == 422 and message in response.text
    with Session(quiz_client.app.state.engine) as session:
        assert session.exec(select(QuizAttempt)).all() == []
        assert session.exec(select(ItemState)).all() == []


def test_edited_item_or_inputs_are_a_422(quiz_client: TestClient) -> None:
    register(quiz_client)
    assert answer(quiz_client, "no-such-item", answer="1").status_code == 422
    edited = {**RIGHT["fx-generated"], "in_params": "1"}
    assert answer(quiz_client, "fx-generated", **edited).status_code == 422


def test_an_unknown_topic_is_a_422(quiz_client: TestClient) -> None:
    register(quiz_client)
    response = quiz_client.get("/quiz?topic=nonsense")
    assert response.status_code == 422 and "no card or tag" in response.text


def test_one_user_cannot_see_another_users_progress(quiz_client: TestClient) -> None:
    register(quiz_client, "ada")
    answer(quiz_client, "fx-single", option="0")
    log_out(quiz_client)
    register(quiz_client, "bob")
    page = quiz_client.get("/progress").text
    assert "No answers yet" in page and "0 of 0 correct" in page
    assert shown_item(quiz_client.get("/quiz").text) == "fx-single"  # new to bob


@pytest.mark.parametrize("mode", ["review", "practice"])
def test_a_review_page_reads_the_users_item_states_once(quiz_client: TestClient, mode: str) -> None:
    # The queue and the progress bar both need them, and practice its FSRS cards for the
    # recall order: each page used to read them twice.
    from sqlalchemy import event

    register(quiz_client)
    answer(quiz_client, shown_item(quiz_client.get("/quiz").text), **RIGHT["fx-single"])
    reads: list[str] = []

    def note(conn, cursor, statement: str, *args: object) -> None:  # noqa: ANN001
        if statement.lstrip().upper().startswith("SELECT") and "FROM itemstate" in statement:
            reads.append(statement)

    engine = quiz_client.app.state.engine
    event.listen(engine, "before_cursor_execute", note)
    try:
        page = quiz_client.get(f"/quiz?mode={mode}")
    finally:
        event.remove(engine, "before_cursor_execute", note)
    assert page.status_code == 200 and shown_item(page.text)
    if mode == "review":
        assert 'id="review-progress" data-done="1" data-total="5"' in page.text
    # A flashcard reads its own state besides, for the intervals on its buttons.
    whole = [s for s in reads if "itemstate.item_id = " not in s.replace("\n", " ")]
    assert len(whole) == 1, reads
    assert ("fsrs_card" in whole[0]) == (mode == "practice"), whole
