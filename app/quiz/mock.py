"""Timed mock interviews: N graded questions drawn up front across topics, a clock, and a
report of strengths and gaps per card."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field
from sqlmodel import Session, select

from app.accounts.models import User
from app.calc.messages import N_, Message
from app.quiz.bank import GRADED_KINDS, GeneratedItem, QuestionBank
from app.quiz.models import MockInterview, QuizAttempt
from app.quiz.service import BadQuestion, Question, question_for


class MockSettings(BaseModel):
    """The start form: how many questions, how many minutes, optionally one topic."""

    model_config = ConfigDict(extra="ignore")

    questions: int = Field(default=8, ge=3, le=30)
    minutes: int = Field(default=20, ge=1, le=120)
    topic: str = Field(default="", max_length=80)


MOCK_LABELS = {"questions": "Questions", "minutes": "Minutes", "topic": "Topic"}


class NotEnoughItems(ValueError):
    pass


def start_mock(
    session: Session, user: User, bank: QuestionBank, card_ids: list[str], n: int,
    minutes: int, rng: random.Random,
) -> MockInterview:  # fmt: skip
    """Draws n graded items, spread over as many cards as possible (one per card first)."""
    assert user.id is not None
    pool = [item for item in bank.for_cards(card_ids) if item.kind in GRADED_KINDS]
    if len(pool) < n:
        raise NotEnoughItems(
            Message(N_("this topic has %(n)s graded questions; ask for at most that"), n=len(pool))
        )
    rng.shuffle(pool)
    first_per_card: dict[str, object] = {}
    for item in pool:
        first_per_card.setdefault(item.card, item)
    spread = list(first_per_card.values()) + [i for i in pool if i not in first_per_card.values()]
    chosen = spread[:n]
    rng.shuffle(chosen)
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
    mock = session.get(MockInterview, mock_id)
    return mock if mock is not None and mock.user_id == user.id else None


def deadline(mock: MockInterview) -> datetime:
    return mock.started_at.astimezone(UTC) + timedelta(seconds=mock.time_limit_s)


def answered(session: Session, mock: MockInterview) -> dict[int, QuizAttempt]:
    """Answers so far, by question index (the n-th attempt answers the n-th question)."""
    attempts = session.exec(
        select(QuizAttempt).where(QuizAttempt.mock_id == mock.id).order_by(QuizAttempt.id)
    ).all()
    return dict(enumerate(attempts))


def current_question(
    session: Session,
    mock: MockInterview,
    bank: QuestionBank,
    now: datetime | None = None,
    lang: str = "en",
) -> tuple[int, Question] | None:
    """The index and question to answer next, or None when finished or out of time. The
    question is in `lang` where its edition is written; the keys, and so the grading, are the
    same in every language, so a learner may switch language mid-interview."""
    now = now or datetime.now(UTC)
    index = len(answered(session, mock))
    if now >= deadline(mock) or index >= len(mock.questions):
        return None
    spec = mock.questions[index]
    item = bank.get(spec["item_id"])
    if item is None:  # removed from the bank since: the interview ends there
        return None
    item = bank.in_language(item, lang)
    return index, question_for(item, spec["inputs"] or None, random.Random(mock.id))


@dataclass(frozen=True)
class CardResult:
    card_id: str
    title: str
    right: int
    asked: int


@dataclass(frozen=True)
class AnswerResult:
    """One question of the interview as the report lists it; `correct` is None when it was
    not answered in time."""

    number: int  # 1-based, in the order asked
    card_id: str
    title: str
    prompt: str  # Markdown, placeholders filled
    correct: bool | None
    duration_s: float | None


@dataclass(frozen=True)
class MockReport:
    asked: int
    answered: int
    right: int
    strengths: list[CardResult]  # every question on the card right
    gaps: list[CardResult]  # a question on the card wrong or unanswered
    time_used_s: float
    questions: list[AnswerResult]

    @property
    def mean_duration_s(self) -> float | None:
        """Mean time per answered question, over the answers whose time is known."""
        times = [q.duration_s for q in self.questions if q.duration_s is not None]
        return sum(times) / len(times) if times else None


def _prompt(bank: QuestionBank, spec: dict, lang: str) -> str:
    item = bank.get(spec["item_id"])
    if item is None:
        return spec["item_id"]
    try:
        return question_for(bank.in_language(item, lang), spec["inputs"] or None).prompt
    except BadQuestion:  # the item's choices changed since the interview was drawn
        return item.prompt


def report(session: Session, mock: MockInterview, bank: QuestionBank, titles: dict[str, str],
           now: datetime | None = None, lang: str = "en") -> MockReport:  # fmt: skip
    now = now or datetime.now(UTC)
    attempts = answered(session, mock)
    per_card: dict[str, list[int]] = {}
    questions = []
    for index, spec in enumerate(mock.questions):
        item = bank.get(spec["item_id"])
        card = item.card if item else "?"
        right, asked = per_card.setdefault(card, [0, 0])
        attempt = attempts.get(index)
        per_card[card] = [right + bool(attempt and attempt.correct), asked + 1]
        duration_ms = attempt.duration_ms if attempt else None
        questions.append(
            AnswerResult(
                number=index + 1,
                card_id=card,
                title=titles.get(card, card),
                prompt=_prompt(bank, spec, lang),
                correct=attempt.correct if attempt else None,
                duration_s=None if duration_ms is None else duration_ms / 1000,
            )
        )
    results = [CardResult(c, titles.get(c, c), r, a) for c, (r, a) in per_card.items()]
    last = max((a.created_at for a in attempts.values()), default=now)
    used = min(last.astimezone(UTC), deadline(mock)) - mock.started_at.astimezone(UTC)
    return MockReport(
        asked=len(mock.questions),
        answered=len(attempts),
        right=sum(1 for a in attempts.values() if a.correct),
        strengths=sorted((r for r in results if r.right == r.asked), key=lambda r: r.title),
        gaps=sorted((r for r in results if r.right < r.asked), key=lambda r: r.right - r.asked),
        time_used_s=max(0.0, used.total_seconds()),
        questions=questions,
    )
