"""The generated quiz item: bank validation, grading by the calculator, attempts kept in SQLite."""

from __future__ import annotations

import random
import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from app.calc.memory import model_states_per_gpu
from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.main import create_app
from app.quiz.bank import BankError, QuestionBank
from app.quiz.service import BadQuestion, draw_question, is_correct, question_for
from tests.utils import make_settings, register

BANK = QuestionBank.load(ROOT_DIR / "content" / "quiz")
ITEM = BANK.get("zero-model-states-per-gpu")


def test_every_item_links_to_a_card_that_exists() -> None:
    cards = CardLibrary.load(ROOT_DIR / "content" / "cards")
    assert BANK.all()
    for item in BANK.all():
        assert item.card in cards


@given(st.randoms(use_true_random=False))
def test_every_drawn_question_is_answerable(rng: random.Random) -> None:
    assert ITEM is not None
    question = draw_question(ITEM, rng)
    expected = (
        model_states_per_gpu(
            question.inputs["params"],
            int(question.inputs["dp_degree"]),
            int(question.inputs["zero_stage"]),
        ).total_bytes
        / 1e9
    )
    assert question.solution.answer == pytest.approx(expected)
    assert "{" not in question.prompt and expected > 0


def test_grading_tolerance_is_relative() -> None:
    assert is_correct(16.6, 16.640625, 0.02)
    assert is_correct(16.31, 16.640625, 0.02)
    assert not is_correct(16.0, 16.640625, 0.02)
    assert not is_correct(-16.64, 16.640625, 0.02)


def test_inputs_outside_the_choices_are_refused() -> None:
    assert ITEM is not None
    with pytest.raises(BadQuestion):
        question_for(ITEM, {"params": 7.5e9, "dp_degree": 64, "zero_stage": 7})
    with pytest.raises(BadQuestion):
        question_for(ITEM, {"params": 7.5e9, "dp_degree": 64})


def test_a_bank_with_an_unknown_generator_is_refused(tmp_path) -> None:
    (tmp_path / "x.yaml").write_text(
        "- {id: a, card: b, kind: generated, generator: nope, prompt: p, unit: GB,"
        " relative_tolerance: 0.1, choices: {x: [1]}}\n"
    )
    with pytest.raises(BankError, match="unknown generator"):
        QuestionBank.load(tmp_path)


def _answer(client: TestClient, answer: str, stage: int = 2) -> object:
    form = {
        "item_id": "zero-model-states-per-gpu",
        "in_params": "7500000000.0",
        "in_dp_degree": "64",
        "in_zero_stage": str(stage),
        "answer": answer,
    }
    return client.post("/quiz/answer", data=form, headers={"HX-Request": "true"})


def test_quiz_needs_a_login(client: TestClient) -> None:
    response = client.get("/quiz", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/login?next=/quiz"


def test_answer_is_graded_shown_with_a_worked_solution_and_saved(client: TestClient) -> None:
    register(client)
    question = client.get("/quiz")
    assert question.status_code == 200 and 'name="answer"' in question.text
    result = _answer(client, "16.6")
    assert result.status_code == 200
    assert "Correct." in result.text and "16.64 GB" in result.text
    assert r"\frac{K\Psi}{N_d}" in result.text
    wrong = _answer(client, "120", stage=3)
    assert "Not quite." in wrong.text
    progress = client.get("/progress")
    assert progress.text.count("<tr>") == 1 + 2
    assert "1 of 2 answers correct" in progress.text


@pytest.mark.parametrize("answer", ["", "sixteen", "nan", "inf"])
def test_a_non_number_gets_an_inline_message_and_is_not_saved(
    client: TestClient, answer: str
) -> None:
    register(client)
    response = _answer(client, answer)
    assert response.status_code == 422 and "type a number" in response.text
    assert "No answers yet" in client.get("/progress").text


def test_edited_question_inputs_are_a_422(client: TestClient) -> None:
    register(client)
    response = client.post(
        "/quiz/answer",
        data={
            "item_id": "zero-model-states-per-gpu",
            "in_params": "1",
            "in_dp_degree": "64",
            "in_zero_stage": "2",
            "answer": "1",
        },
    )
    assert response.status_code == 422


def test_attempts_survive_an_app_restart(tmp_path) -> None:
    settings = make_settings(tmp_path / "data")
    with TestClient(create_app(settings)) as first:
        register(first, "grace", "password123")
        assert _answer(first, "16.64").status_code == 200
    assert settings.database_path.exists()
    with TestClient(create_app(settings)) as second:
        second.post("/login", data={"username": "grace", "password": "password123"})
        page = second.get("/progress").text
    assert "1 of 1 answers correct" in page
    assert re.search(r"7.5 B-parameter model", page)


def test_one_user_cannot_see_another_users_attempts(client: TestClient) -> None:
    register(client, "ada")
    _answer(client, "16.64")
    client.post("/logout")
    register(client, "bob")
    assert "No answers yet" in client.get("/progress").text
