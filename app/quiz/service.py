"""Drawing a generated question, grading an answer with the calculator, keeping the attempt."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from sqlmodel import Session, col, select

from app.accounts.models import User
from app.quiz.bank import GeneratedNumericItem
from app.quiz.generators import GENERATORS, Solution
from app.quiz.models import QuizAttempt


class BadQuestion(ValueError):
    """The submitted inputs are not ones this item can draw (a stale or edited form)."""


@dataclass(frozen=True)
class Question:
    item: GeneratedNumericItem
    inputs: dict[str, float | int]
    prompt: str
    solution: Solution


def question_for(item: GeneratedNumericItem, inputs: Mapping[str, float | int]) -> Question:
    if set(inputs) != set(item.choices):
        raise BadQuestion(f"expected inputs {sorted(item.choices)}, got {sorted(inputs)}")
    for name, value in inputs.items():
        if value not in item.choices[name]:
            raise BadQuestion(f"{name}={value!r} is not one of this question's choices")
    solution = GENERATORS[item.generator](inputs)
    return Question(
        item=item,
        inputs=dict(inputs),
        prompt=item.prompt.format(**solution.prompt_fields),
        solution=solution,
    )


def draw_question(item: GeneratedNumericItem, rng: random.Random) -> Question:
    return question_for(item, {name: rng.choice(values) for name, values in item.choices.items()})


def is_correct(answer: float, expected: float, relative_tolerance: float) -> bool:
    return math.isclose(answer, expected, rel_tol=relative_tolerance, abs_tol=0.0)


def record_attempt(session: Session, user: User, question: Question, answer: float) -> QuizAttempt:
    """Stores the graded answer; it is committed before this returns."""
    assert user.id is not None
    expected = question.solution.answer
    attempt = QuizAttempt(
        user_id=user.id,
        item_id=question.item.id,
        question_params=question.inputs,
        prompt=question.prompt,
        answer=answer,
        expected=expected,
        unit=question.item.unit,
        correct=is_correct(answer, expected, question.item.relative_tolerance),
    )
    session.add(attempt)
    session.commit()
    session.refresh(attempt)
    return attempt


def attempts_of(session: Session, user: User, limit: int = 200) -> list[QuizAttempt]:
    statement = (
        select(QuizAttempt)
        .where(QuizAttempt.user_id == user.id)
        .order_by(col(QuizAttempt.created_at).desc(), col(QuizAttempt.id).desc())
        .limit(limit)
    )
    return list(session.exec(statement))
