"""Drawing a question of any kind, grading an answer, and keeping it: the attempt and the
item's new FSRS state are written in one transaction, committed before this returns. The
learner's latest answer can be taken back for a while (undo_answer), which puts the item's
state back as it was."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from fsrs import Card, Rating
from sqlalchemy import and_, bindparam, or_
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, delete, select

from app.accounts.models import User
from app.calc.messages import N_, Message
from app.quiz.free_grading import AutoChecks, auto_checks, rating_for_score, rubric_score
from app.quiz.generators import GENERATORS, Solution
from app.quiz.grading import AnswerError, grade_choice, parse_number, within_tolerance
from app.quiz.items import (
    FlashcardItem,
    FreeResponseItem,
    GeneratedItem,
    MultipleChoiceItem,
    NumericItem,
    QuizItem,
    SingleChoiceItem,
)
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.rendering import markdown_html
from app.quiz.scheduling import new_card, preview, rating_for_answer, review
from app.quiz.stored_cards import card_id_for, repaired_card

log = logging.getLogger(__name__)


class BadQuestion(ValueError):
    """The submitted inputs are not ones this item can draw (a stale or edited form)."""


@dataclass(frozen=True)
class Question:
    item: QuizItem
    inputs: dict[str, float | int]  # a generated item's drawn inputs; empty otherwise
    prompt: str  # Markdown, placeholders filled
    solution: Solution | None = None  # generated items only
    option_order: list[int] = field(default_factory=list)  # choice items: display order

    @property
    def prompt_html(self) -> str:
        return markdown_html(self.prompt)


@dataclass(frozen=True)
class Outcome:
    """A graded (or self-rated) answer, ready to store."""

    correct: bool
    rating: Rating
    answer: float | None = None
    expected: float | None = None
    answer_text: str = ""
    picked: frozenset[int] = frozenset()
    duration_ms: int | None = None
    # A free response: the whole answer, its automatic checks and the score with the rubric.
    response: str | None = None
    checks: AutoChecks | None = None
    score: float | None = None


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def fill_prompt(prompt: str, fields: Mapping[str, str]) -> str:
    """Fills {name} for the generator's fields only, so LaTeX braces in a prompt survive."""
    return _PLACEHOLDER.sub(lambda m: fields.get(m.group(1), m.group(0)), prompt)


def question_for(
    item: QuizItem,
    inputs: Mapping[str, float | int] | None = None,
    rng: random.Random | None = None,
) -> Question:
    if isinstance(item, GeneratedItem):
        inputs = dict(inputs or {})
        if set(inputs) != set(item.choices):
            raise BadQuestion(f"expected inputs {sorted(item.choices)}, got {sorted(inputs)}")
        for name, value in inputs.items():
            if value not in item.choices[name]:
                raise BadQuestion(f"{name}={value!r} is not one of this question's choices")
        solution = GENERATORS[item.generator](inputs)
        return Question(item, inputs, fill_prompt(item.prompt, solution.prompt_fields), solution)
    order = []
    if isinstance(item, SingleChoiceItem | MultipleChoiceItem):
        order = list(range(len(item.options)))
        (rng or DRAWS).shuffle(order)
    return Question(item, {}, item.prompt, option_order=order)


# One generator for the pages' draws: a new random.Random() seeds itself from the system's
# entropy, a cost the question page paid on every view. Nothing here needs to be unguessable.
DRAWS = random.Random()


def draw_question(item: QuizItem, rng: random.Random = DRAWS) -> Question:
    inputs = None
    if isinstance(item, GeneratedItem):
        inputs = {name: rng.choice(values) for name, values in item.choices.items()}
    return question_for(item, inputs, rng)


def expected_answer(question: Question) -> float | None:
    if question.solution is not None:
        return question.solution.answer
    if isinstance(question.item, NumericItem):
        return question.item.answer
    return None


def grade(
    question: Question,
    answer: str,
    picked: set[int],
    self_rating: int | None,
    duration_s: float | None,
    hinted: bool,
    response: str = "",
    compared: bool = True,
) -> Outcome:
    """Grades what the form sent for this question's kind; AnswerError says what to fix. A free
    response is `response`, with the rubric points the learner ticked in `picked`."""
    item = question.item
    duration_ms = None if duration_s is None else int(duration_s * 1000)
    if isinstance(item, FreeResponseItem):
        if not compared:
            raise AnswerError(Message(N_("compare your answer with the model answer first")))
        return grade_free(item, response, picked, duration_s)
    if isinstance(item, FlashcardItem):
        if self_rating not in (1, 2, 3, 4):
            raise AnswerError(Message(N_("rate yourself: Again, Hard, Good or Easy")))
        rating = Rating(self_rating)
        return Outcome(rating != Rating.Again, rating, answer_text=rating.name,
                       duration_ms=duration_ms)  # fmt: skip
    if isinstance(item, SingleChoiceItem | MultipleChoiceItem):
        if not picked:
            pick = N_("pick an option") if item.kind == "single" else N_("pick the options")
            raise AnswerError(Message(pick))
        if any(not 0 <= i < len(item.options) for i in picked):
            raise AnswerError(Message(N_("that option is not one of this question's")))
        if item.kind == "single" and len(picked) != 1:
            raise AnswerError(Message(N_("pick exactly one option")))
        result = grade_choice([o.correct for o in item.options], picked)
        rating = rating_for_answer(item.kind, result.correct, duration_s, hinted)
        text = ",".join(str(i) for i in sorted(picked))
        return Outcome(result.correct, rating, answer_text=text, picked=result.picked,
                       duration_ms=duration_ms)  # fmt: skip
    unit = item.unit
    value = parse_number(answer, unit)
    expected = expected_answer(question)
    assert expected is not None
    if isinstance(item, NumericItem):
        correct = within_tolerance(value, expected, item.relative_tolerance,
                                   item.absolute_tolerance)  # fmt: skip
    else:
        correct = within_tolerance(value, expected, item.relative_tolerance)
    rating = rating_for_answer(item.kind, correct, duration_s, hinted)
    return Outcome(correct, rating, answer=value, expected=expected, answer_text=answer.strip(),
                   duration_ms=duration_ms)  # fmt: skip


def grade_free(
    item: FreeResponseItem, response: str, ticked: set[int], duration_s: float | None
) -> Outcome:
    """The answer's automatic checks, the ticked rubric weights, the score and its rating."""
    if not response.strip():
        raise AnswerError(Message(N_("write or dictate your answer first")))
    if any(not 0 <= i < len(item.rubric) for i in ticked):
        raise AnswerError(Message(N_("that rubric point is not one of this question's")))
    checks = auto_checks(item, response)
    score = rubric_score(item, ticked, checks)
    rating = rating_for_score(score, duration_s, item.minutes)
    return Outcome(rating != Rating.Again, rating, answer_text=response.strip()[:200],
                   picked=frozenset(ticked), duration_ms=None if duration_s is None
                   else int(duration_s * 1000), response=response.strip(), checks=checks,
                   score=score)  # fmt: skip


# Built once: every answer and every flashcard's question page reads a state.
_STATE = select(ItemState).where(
    ItemState.user_id == bindparam("user_id"), ItemState.item_id == bindparam("item_id")
)


def state_for(session: Session, user_id: int, item_id: str) -> ItemState | None:
    """The user's ItemState of the item; None for an item never answered."""
    return session.exec(_STATE, params={"user_id": user_id, "item_id": item_id}).first()


def fsrs_card_of(state: ItemState | None, user_id: int, item_id: str, now: datetime) -> Card:
    """The user's FSRS card of the item: the stored one, or a new card due `now` for an item
    never answered."""
    if state is None:
        return new_card(card_id=card_id_for(user_id, item_id), now=now)
    # A card stored before the import checked them (issue #25, finding 7) is answered from its
    # repaired form, and the answer stores a sound one.
    repaired = repaired_card(state.fsrs_card, card_id_for(user_id, item_id), now)
    if repaired.fixes:
        log.warning(
            "user %s, item %s: stored FSRS card read as repaired (%s); "
            "`python -m app.admin repair-progress` mends every such card",
            user_id, item_id, "; ".join(repaired.fixes),
        )  # fmt: skip
    return repaired.card


def next_intervals(
    state: ItemState | None, user_id: int, item_id: str, now: datetime
) -> dict[int, float]:
    """Seconds from `now` until the item would be due again after each rating (1 Again ..
    4 Easy), as record_answer would schedule it at `now`; nothing is saved."""
    card = fsrs_card_of(state, user_id, item_id, now)
    return {int(rating): (due - now).total_seconds() for rating, due in preview(card, now).items()}


def _state_before(state: ItemState | None) -> dict[str, Any] | None:
    """What QuizAttempt.previous_state keeps of the state an answer is about to change."""
    if state is None:
        return None
    return {"fsrs_card": dict(state.fsrs_card), "due": state.due.isoformat(),
            "reviews": state.reviews, "lapses": state.lapses,
            "updated_at": state.updated_at.isoformat()}  # fmt: skip


def _apply_review(
    session: Session, state: ItemState | None, user_id: int, item_id: str, rating: Rating,
    now: datetime,
) -> ItemState:  # fmt: skip
    card = review(fsrs_card_of(state, user_id, item_id, now), rating, now)
    if state is None:
        state = ItemState(user_id=user_id, item_id=item_id, fsrs_card=card.to_dict(), due=now)
    state.fsrs_card = card.to_dict()
    state.due = card.due
    state.reviews += 1
    state.lapses += rating == Rating.Again
    state.updated_at = now
    session.add(state)
    return state


def record_answer(
    session: Session,
    user: User,
    question: Question,
    outcome: Outcome,
    mock_id: int | None = None,
    now: datetime | None = None,
) -> tuple[QuizAttempt, ItemState]:
    """Stores the attempt and the item's next FSRS state; both are committed before this
    returns, so a response that says 'recorded' is never a lie, even if the process dies."""
    assert user.id is not None
    now = now or datetime.now(UTC)
    item = question.item
    for attempt_number in range(2):
        before = state_for(session, user.id, item.id)
        attempt = QuizAttempt(
            user_id=user.id,
            item_id=item.id,
            kind=item.kind,
            question_params=question.inputs,
            prompt=question.prompt,
            answer=outcome.answer,
            expected=outcome.expected,
            answer_text=outcome.answer_text[:200],
            unit=getattr(item, "unit", ""),
            correct=outcome.correct,
            rating=int(outcome.rating),
            duration_ms=outcome.duration_ms,
            mock_id=mock_id,
            created_at=now,
            previous_state=_state_before(before),
            response=outcome.response,
            rubric_ticked=sorted(outcome.picked) if outcome.response is not None else None,
            score=outcome.score,
        )
        session.add(attempt)
        state = _apply_review(session, before, user.id, item.id, outcome.rating, now)
        # Kept as written, not expired by the commit: the page shows the attempt, the state
        # and the user, and reading each back would cost a query for values set here (the
        # ids come with the inserts).
        session.expire_on_commit = False
        try:
            session.commit()
        except IntegrityError:
            # Two answers to a first-seen item raced to create its state: retry once.
            session.rollback()
            if attempt_number:
                raise
            continue
        finally:
            session.expire_on_commit = True
        return attempt, state
    raise AssertionError("unreachable")


UNDO_WITHIN = timedelta(minutes=10)
NO_SUCH_ANSWER = N_("there is no such answer of yours: it may be undone already")


class CannotUndo(ValueError):
    """An answer the learner may not take back; its Message says why."""


@dataclass(frozen=True)
class Undone:
    """What an undone answer leaves: the question to ask again and the item's state as it is
    now (None when the answer was the item's first)."""

    item_id: str
    question_params: dict[str, float | int]
    state: ItemState | None


def _answered_since(session: Session, user_id: int, moment: datetime, attempt_id: int) -> bool:
    """Whether the user has an answer later than the attempt (`moment`, `attempt_id`)."""
    later = or_(
        col(QuizAttempt.created_at) > moment,
        and_(col(QuizAttempt.created_at) == moment, col(QuizAttempt.id) > attempt_id),
    )
    statement = select(QuizAttempt.id).where(QuizAttempt.user_id == user_id, later).limit(1)
    return session.exec(statement).first() is not None


def undo_answer(
    session: Session, user: User, attempt_id: int, now: datetime | None = None
) -> Undone:
    """Takes back the user's latest answer, given within UNDO_WITHIN and not in a mock
    interview: deletes the attempt and puts the item's state back as previous_state kept it
    (or deletes it, after a first answer), in one transaction. CannotUndo says why not."""
    now = now or datetime.now(UTC)
    gone = Message(NO_SUCH_ANSWER)
    attempt = session.get(QuizAttempt, attempt_id)
    if attempt is None or attempt.user_id != user.id:
        raise CannotUndo(gone)
    if attempt.mock_id is not None:
        raise CannotUndo(Message(N_("an answer in a mock interview cannot be undone")))
    if now - attempt.created_at > UNDO_WITHIN:
        minutes = int(UNDO_WITHIN.total_seconds() // 60)
        raise CannotUndo(
            Message(N_("an answer can be undone for %(minutes)s minutes only"), minutes=minutes)
        )
    user_id, item_id, answered_at = attempt.user_id, attempt.item_id, attempt.created_at
    inputs, previous = dict(attempt.question_params), attempt.previous_state
    # SQLite runs the reads above outside a transaction; deleting first takes the write lock,
    # so what the checks below read cannot change before the commit, and of two clicks on
    # Undo the second finds nothing left to delete.
    if session.exec(delete(QuizAttempt).where(col(QuizAttempt.id) == attempt_id)).rowcount != 1:
        session.rollback()
        raise CannotUndo(gone)
    state = state_for(session, user_id, item_id)
    if _answered_since(session, user_id, answered_at, attempt_id):
        session.rollback()
        raise CannotUndo(Message(N_("only your latest answer can be undone")))
    # The state must be the one this answer left: an import may have replaced it since, and an
    # answer from before undo existed kept nothing of the state before it (previous_state is
    # null as if it were the first). Putting an older state back would lose what came since.
    if (state is None or state.updated_at != answered_at
            or (previous is None and state.reviews != 1)):  # fmt: skip
        session.rollback()
        raise CannotUndo(
            Message(N_("this question's schedule changed after that answer: it cannot be undone"))
        )
    if previous is None:
        session.delete(state)
        session.commit()
        return Undone(item_id, inputs, None)
    state.fsrs_card = previous["fsrs_card"]
    state.due = datetime.fromisoformat(previous["due"])
    state.reviews, state.lapses = previous["reviews"], previous["lapses"]
    state.updated_at = datetime.fromisoformat(previous["updated_at"])
    session.add(state)
    session.commit()
    session.refresh(state)
    return Undone(item_id, inputs, state)


def attempts_of(session: Session, user: User, limit: int = 200) -> list[QuizAttempt]:
    statement = (
        select(QuizAttempt)
        .where(QuizAttempt.user_id == user.id)
        .order_by(col(QuizAttempt.created_at).desc(), col(QuizAttempt.id).desc())
        .limit(limit)
    )
    return list(session.exec(statement))
