"""A mock interview's report: each question right, wrong, skipped or unanswered with the time
spent on it, and per card the strengths and the gaps to review next."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from sqlmodel import Session

from app.cards.service import CardLibrary
from app.quiz.bank import QuestionBank
from app.quiz.free_view import RubricRow, rubric_rows
from app.quiz.items import FreeResponseItem
from app.quiz.mock import (
    ENDED_AT,
    SKIPPED_AT,
    answered,
    deadline,
    ended_early,
    handled_as,
    open_questions,
)
from app.quiz.models import MockInterview, QuizAttempt
from app.quiz.service import BadQuestion, question_for


class QuestionOutcome(StrEnum):
    RIGHT = "right"
    WRONG = "wrong"
    SKIPPED = "skipped"
    UNANSWERED = "unanswered"  # the clock ran out first, or the learner ended early


@dataclass(frozen=True)
class CardResult:
    card_id: str
    title: str
    right: int
    asked: int


@dataclass(frozen=True)
class AnswerResult:
    """One question of the interview as the report lists it."""

    number: int  # 1-based, in the order asked
    card_id: str
    title: str
    prompt: str  # Markdown, placeholders filled
    outcome: QuestionOutcome
    duration_s: float | None  # answered or skipped: the time it was on screen
    level: str = "mid"  # app.quiz.items.LEVELS
    score: float | None = None  # a free response: its rubric score, 0 to 1
    # A free response: the rubric points it did not make, each with its card section.
    missed: list[RubricRow] = field(default_factory=list)
    follow_up: bool = False  # asked as a follow-up of the question before


@dataclass(frozen=True)
class MockReport:
    asked: int
    strengths: list[CardResult]  # every question on the card right
    gaps: list[CardResult]  # a question on the card wrong, skipped or unanswered
    time_used_s: float
    questions: list[AnswerResult]
    ended_early: bool

    def count(self, outcome: QuestionOutcome) -> int:
        return sum(1 for q in self.questions if q.outcome == outcome)

    @property
    def right(self) -> int:
        return self.count(QuestionOutcome.RIGHT)

    @property
    def answered(self) -> int:
        return self.right + self.count(QuestionOutcome.WRONG)

    @property
    def skipped(self) -> int:
        return self.count(QuestionOutcome.SKIPPED)

    @property
    def unanswered(self) -> int:
        return self.count(QuestionOutcome.UNANSWERED)

    @property
    def mean_duration_s(self) -> float | None:
        """Mean time per answered question, over the answers whose time is known."""
        answers = (QuestionOutcome.RIGHT, QuestionOutcome.WRONG)
        times = [q.duration_s for q in self.questions
                 if q.outcome in answers and q.duration_s is not None]  # fmt: skip
        return sum(times) / len(times) if times else None


def _prompt(bank: QuestionBank, spec: dict, lang: str) -> str:
    item = bank.get(spec["item_id"])
    if item is None:
        return spec["item_id"]
    try:
        return question_for(bank.in_language(item, lang), spec["inputs"] or None).prompt
    except BadQuestion:  # the item's choices changed since the interview was drawn
        return item.prompt


def _outcome(attempt: QuizAttempt | None, skipped: bool) -> QuestionOutcome:
    if attempt is not None:
        return QuestionOutcome.RIGHT if attempt.correct else QuestionOutcome.WRONG
    return QuestionOutcome.SKIPPED if skipped else QuestionOutcome.UNANSWERED


def _duration_s(attempt: QuizAttempt | None, spec: dict) -> float | None:
    duration_ms = attempt.duration_ms if attempt is not None else spec.get("duration_ms")
    return None if duration_ms is None else duration_ms / 1000


def _finished_at(mock: MockInterview, attempts: dict[int, QuizAttempt], now: datetime) -> datetime:
    """When the interview stopped: at its last answer, skip or early end; at the deadline if
    the clock ran out with questions left."""
    if open_questions(mock, attempts) and not ended_early(mock):
        return min(now, deadline(mock))
    moments = [a.created_at.astimezone(UTC) for a in attempts.values()]
    moments += [datetime.fromisoformat(spec[key]) for spec in mock.questions
                for key in (SKIPPED_AT, ENDED_AT) if key in spec]  # fmt: skip
    return min(max(moments, default=now), deadline(mock))


def _missed(cards: CardLibrary | None, item: object, attempt: QuizAttempt | None,
            lang: str) -> list[RubricRow]:  # fmt: skip
    if cards is None or not isinstance(item, FreeResponseItem) or attempt is None:
        return []
    ticked = set(attempt.rubric_ticked or [])
    return [row for row in rubric_rows(cards, item, lang) if row.index not in ticked]


def report(session: Session, mock: MockInterview, bank: QuestionBank, titles: dict[str, str],
           now: datetime | None = None, lang: str = "en",
           cards: CardLibrary | None = None) -> MockReport:  # fmt: skip
    now = now or datetime.now(UTC)
    attempts = answered(session, mock)
    per_card: dict[str, list[int]] = {}
    questions = []
    for index, spec in enumerate(mock.questions):
        item = bank.get(spec["item_id"])
        card = item.card if item else "?"
        attempt = attempts.get(index)
        outcome = _outcome(attempt, handled_as(mock, attempts, index) == "skipped")
        right, asked = per_card.setdefault(card, [0, 0])
        per_card[card] = [right + (outcome == QuestionOutcome.RIGHT), asked + 1]
        questions.append(
            AnswerResult(
                number=index + 1,
                card_id=card,
                title=titles.get(card, card),
                prompt=_prompt(bank, spec, lang),
                outcome=outcome,
                duration_s=_duration_s(attempt, spec),
                level=bank.level_of(item) if item else "mid",
                score=attempt.score if attempt is not None else None,
                missed=_missed(
                    cards, bank.in_language(item, lang) if item else None, attempt, lang
                ),  # fmt: skip
                follow_up=bool(getattr(item, "follows", None)),
            )
        )
    results = [CardResult(c, titles.get(c, c), r, a) for c, (r, a) in per_card.items()]
    used = _finished_at(mock, attempts, now) - mock.started_at.astimezone(UTC)
    return MockReport(
        asked=len(mock.questions),
        strengths=sorted((r for r in results if r.right == r.asked), key=lambda r: r.title),
        gaps=sorted((r for r in results if r.right < r.asked), key=lambda r: r.right - r.asked),
        time_used_s=max(0.0, used.total_seconds()),
        questions=questions,
        ended_early=ended_early(mock),
    )
