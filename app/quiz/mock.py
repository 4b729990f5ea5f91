"""Timed mock interviews: N graded questions drawn up front across topics, asked one after
another against a clock; the report (app/quiz/mock_report.py) says what was right.

Each question ends answered (a QuizAttempt with the mock's id, which reschedules the item as
any answer does), skipped, or unanswered (the clock ran out, or the learner ended early). A skip
and an early end are kept beside the question in MockInterview.questions ("skipped_at",
"ended_at"): they need no table of their own, and leave every item's FSRS state as it was."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm.attributes import flag_modified
from sqlmodel import Session, select

from app.accounts.models import User
from app.calc.messages import N_, Message
from app.db import get_row
from app.quiz.bank import QuestionBank
from app.quiz.items import INTERVIEW_KINDS, LEVELS, GeneratedItem, QuizItem
from app.quiz.models import MockInterview, QuizAttempt
from app.quiz.review_queue import askable_items
from app.quiz.service import Question, question_for

SKIPPED_AT = "skipped_at"
ENDED_AT = "ended_at"


class MockSettings(BaseModel):
    """The start form: how many questions, how many minutes, optionally one topic; the level
    to mix the questions to, and whether to ask everything or only spoken answers."""

    model_config = ConfigDict(extra="ignore")

    questions: int = Field(default=8, ge=3, le=30)
    minutes: int = Field(default=20, ge=1, le=120)
    topic: str = Field(default="", max_length=80)
    level: Literal["any", "junior", "mid", "senior"] = "any"
    style: Literal["mixed", "spoken"] = "mixed"


MOCK_LABELS = {"questions": "Questions", "minutes": "Minutes", "topic": "Topic",
               "level": "Level", "style": "Questions to ask"}  # fmt: skip

# How often an item of each level is drawn for a chosen level: mostly that level, some of the
# next one either side, none two away (a junior loop asks no senior question).
LEVEL_WEIGHTS = {
    "junior": {"junior": 3.0, "mid": 1.0, "senior": 0.0},
    "mid": {"junior": 1.0, "mid": 3.0, "senior": 1.0},
    "senior": {"junior": 0.0, "mid": 1.0, "senior": 3.0},
}
assert all(set(w) == set(LEVELS) for w in LEVEL_WEIGHTS.values())


def _weighted_order(items: list[QuizItem], weight: dict[str, float], bank: QuestionBank,
                    rng: random.Random) -> list[QuizItem]:  # fmt: skip
    """A random order in which an item of weight w comes early w times as often (Efraimidis
    and Spirakis's keys, u^(1/w)); items of weight 0 are left out."""
    keyed = [(rng.random() ** (1 / w), item) for item in items
             if (w := weight[bank.level_of(item)]) > 0]  # fmt: skip
    return [item for _, item in sorted(keyed, key=lambda pair: pair[0], reverse=True)]


def _with_follow_ups(item: QuizItem, bank: QuestionBank) -> list[QuizItem]:
    """The item, then its follow-ups and theirs, in the order an interviewer asks them."""
    chain = [item]
    for follow in bank.follow_ups(item):
        chain += _with_follow_ups(follow, bank)
    return chain


class NotEnoughItems(ValueError):
    pass


class MockClosed(ValueError):
    """A question that takes no answer and no skip now; its Message says why."""


def start_mock(
    session: Session, user: User, bank: QuestionBank, card_ids: list[str], n: int,
    minutes: int, rng: random.Random, level: str = "any", style: str = "mixed",
) -> MockInterview:  # fmt: skip
    """Draws n questions, spread over as many cards as possible (one per card first), mixed to
    `level` (LEVEL_WEIGHTS); the items the learner suspended are not drawn. A free response
    drawn brings its follow-ups right after it, as an interviewer asks them; `spoken` asks free
    responses only, openers with follow-ups first."""
    assert user.id is not None
    askable = askable_items(session, user.id, bank, card_ids)
    kinds = {"free"} if style == "spoken" else INTERVIEW_KINDS
    pool = [item for item in askable
            if item.kind in kinds and getattr(item, "follows", None) is None]  # fmt: skip
    rng.shuffle(pool)
    if level in LEVEL_WEIGHTS:
        pool = _weighted_order(pool, LEVEL_WEIGHTS[level], bank, rng)
    if style == "spoken":  # an opener with follow-ups first: the interview is the chain
        pool.sort(key=lambda item: not bank.follow_ups(item))
    suspended_or_gone = {i.id for i in bank.all()} - {i.id for i in askable}
    chains = [[i for i in _with_follow_ups(item, bank) if i.id not in suspended_or_gone]
              for item in pool]  # fmt: skip
    if sum(len(chain) for chain in chains) < n:
        available = sum(len(chain) for chain in chains)
        raise NotEnoughItems(
            Message(N_("this topic has %(n)s graded questions; ask for at most that"), n=available)
        )
    first_per_card: dict[str, list[QuizItem]] = {}
    for chain in chains:
        first_per_card.setdefault(chain[0].card, chain)
    spread = list(first_per_card.values()) + [c for c in chains
                                              if c is not first_per_card[c[0].card]]  # fmt: skip
    picked: list[list[QuizItem]] = []
    for chain in spread:
        if sum(len(c) for c in picked) >= n:
            break
        picked.append(chain)
    rng.shuffle(picked)
    chosen = [item for chain in picked for item in chain][:n]
    questions = []
    for item in chosen:
        inputs = {}
        if isinstance(item, GeneratedItem):
            inputs = {name: rng.choice(values) for name, values in item.choices.items()}
        questions.append({"item_id": item.id, "inputs": inputs})  # type: ignore[attr-defined]
    mock = MockInterview(user_id=user.id, questions=questions, time_limit_s=minutes * 60)
    session.add(mock)
    session.commit()
    session.refresh(mock)
    return mock


def mock_of(session: Session, user: User, mock_id: int) -> MockInterview | None:
    """The user's own mock interview, or None (another user's reads as missing)."""
    mock = get_row(session, MockInterview, mock_id)
    return mock if mock is not None and mock.user_id == user.id else None


def deadline(mock: MockInterview) -> datetime:
    return mock.started_at.astimezone(UTC) + timedelta(seconds=mock.time_limit_s)


def answered(session: Session, mock: MockInterview) -> dict[int, QuizAttempt]:
    """Answers so far, by question index. start_mock draws each item once, so an answer is the
    answer to its item's question; of two (two tabs sending at once) the first counts."""
    index_of = {spec["item_id"]: index for index, spec in enumerate(mock.questions)}
    attempts = session.exec(
        select(QuizAttempt).where(QuizAttempt.mock_id == mock.id).order_by(QuizAttempt.id)
    ).all()
    by_index: dict[int, QuizAttempt] = {}
    for attempt in attempts:
        if (index := index_of.get(attempt.item_id)) is not None:
            by_index.setdefault(index, attempt)
    return by_index


def open_questions(mock: MockInterview, attempts: dict[int, QuizAttempt]) -> list[int]:
    """Indexes of the questions neither answered, skipped nor closed by an early end, in the
    order asked: the first is the one being asked (until the clock runs out)."""
    closed = (SKIPPED_AT, ENDED_AT)
    return [
        index
        for index, spec in enumerate(mock.questions)
        if index not in attempts and not any(key in spec for key in closed)
    ]


def next_index(mock: MockInterview, attempts: dict[int, QuizAttempt]) -> int | None:
    return next(iter(open_questions(mock, attempts)), None)


def ended_early(mock: MockInterview) -> bool:
    return any(ENDED_AT in spec for spec in mock.questions)


def handled_as(
    mock: MockInterview, attempts: dict[int, QuizAttempt], index: int
) -> Literal["answered", "skipped"] | None:
    """How the learner dealt with a question: never right or wrong, which the interview says
    only in its report."""
    if index in attempts:
        return "answered"
    if 0 <= index < len(mock.questions) and SKIPPED_AT in mock.questions[index]:
        return "skipped"
    return None


def over_because(
    mock: MockInterview, attempts: dict[int, QuizAttempt], now: datetime
) -> Message | None:
    """Why the interview takes nothing more, or None while a question is being asked."""
    if ended_early(mock):
        return Message(N_("This interview is over: you ended it early. Nothing more was recorded."))
    if now >= deadline(mock):
        return Message(N_("This interview is over: the time ran out. Nothing more was recorded."))
    if next_index(mock, attempts) is None:
        return Message(
            N_("This interview is over: every question is answered or skipped. "
               "Nothing more was recorded.")
        )  # fmt: skip
    return None


def refusal(
    mock: MockInterview, attempts: dict[int, QuizAttempt], index: int | None, now: datetime
) -> Message | None:
    """Why question `index` (0-based, as a form sent it) takes no answer and no skip now; None
    when it is the question being asked."""
    if (over := over_because(mock, attempts, now)) is not None:
        return over
    current = next_index(mock, attempts)
    assert current is not None  # over_because said so
    if index == current:
        return None
    if index is None or not 0 <= index < len(mock.questions):
        return Message(N_("The form did not say which question of this interview it is for; "
                          "nothing was recorded."))  # fmt: skip
    numbers = {"n": index + 1, "current": current + 1}
    if handled_as(mock, attempts, index) == "answered":
        template = N_("Question %(n)s is answered already; nothing was changed. "
                      "This is question %(current)s.")  # fmt: skip
    elif handled_as(mock, attempts, index) == "skipped":
        template = N_("Question %(n)s was skipped already; nothing was changed. "
                      "This is question %(current)s.")  # fmt: skip
    else:
        template = N_("Question %(n)s is not asked yet; nothing was recorded. "
                      "This is question %(current)s.")  # fmt: skip
    return Message(template, **numbers)


def current_question(
    session: Session,
    mock: MockInterview,
    bank: QuestionBank,
    now: datetime | None = None,
    lang: str = "en",
) -> tuple[int, Question] | None:
    """The index and question to answer next, or None when the interview is over. The
    question is in `lang` where its edition is written; the keys, and so the grading, are the
    same in every language, so a learner may switch language mid-interview."""
    now = now or datetime.now(UTC)
    attempts = answered(session, mock)
    index = next_index(mock, attempts)
    if index is None or over_because(mock, attempts, now) is not None:
        return None
    spec = mock.questions[index]
    item = bank.get(spec["item_id"])
    if item is None:  # removed from the bank since: the interview ends there
        return None
    item = bank.in_language(item, lang)
    return index, question_for(item, spec["inputs"] or None, random.Random(mock.id))


def _save_questions(session: Session, mock: MockInterview, questions: list[dict]) -> None:
    mock.questions = questions
    flag_modified(mock, "questions")  # a JSON column: SQLAlchemy sees no change made inside it
    session.add(mock)
    session.commit()
    session.refresh(mock)


def skip_question(
    session: Session, mock: MockInterview, index: int | None, duration_s: float | None,
    now: datetime | None = None,
) -> int:  # fmt: skip
    """Marks the question being asked as skipped (with the time spent on it), so the next one
    is asked; no attempt is written, and so no item is rescheduled. Returns its index;
    MockClosed says why it cannot be skipped."""
    now = now or datetime.now(UTC)
    if (refused := refusal(mock, answered(session, mock), index, now)) is not None:
        raise MockClosed(refused)
    assert index is not None  # refusal said it is the question being asked
    duration_ms = None if duration_s is None else int(duration_s * 1000)
    skipped = {SKIPPED_AT: now.isoformat(), "duration_ms": duration_ms}
    questions = [{**spec, **skipped} if i == index else spec
                 for i, spec in enumerate(mock.questions)]  # fmt: skip
    _save_questions(session, mock, questions)
    return index


def end_early(session: Session, mock: MockInterview, now: datetime | None = None) -> int:
    """Ends the interview now: every question not yet answered or skipped is closed, to be
    reported as unanswered. Returns how many were closed; MockClosed says why none could be."""
    now = now or datetime.now(UTC)
    attempts = answered(session, mock)
    if (over := over_because(mock, attempts, now)) is not None:
        raise MockClosed(over)
    closed = open_questions(mock, attempts)
    questions = [{**spec, ENDED_AT: now.isoformat()} if i in closed else spec
                 for i, spec in enumerate(mock.questions)]  # fmt: skip
    _save_questions(session, mock, questions)
    return len(closed)
