"""What an answer form sends is read with bounds (app/quiz/answer_form.py): a shown_at of
hundreds of digits was a 500 (issue #25, finding 8), dividing it overflowed a float."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from app.quiz.models import QuizAttempt
from tests.quiz.test_review import RIGHT, answer
from tests.utils import register


def test_a_shown_at_of_hundreds_of_digits_is_no_time(quiz_client: TestClient) -> None:
    register(quiz_client)
    fields = {**RIGHT["fx-single"], "shown_at": "9" * 400}
    response = quiz_client.post(
        "/quiz/answer", data={"item_id": "fx-single", **fields}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    # graded and recorded without a duration; a real shown_at still gives one
    assert answer(quiz_client, "fx-numeric", **RIGHT["fx-numeric"]).status_code == 200
    with Session(quiz_client.app.state.engine) as session:
        attempts = session.exec(select(QuizAttempt).order_by(col(QuizAttempt.id))).all()
    assert [(a.item_id, a.correct) for a in attempts] == [("fx-single", True), ("fx-numeric", True)]
    assert attempts[0].duration_ms is None and attempts[1].duration_ms is not None
