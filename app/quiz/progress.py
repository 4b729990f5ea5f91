"""Where a learner stands: mastery per topic (card), due counts, streak, daily history,
weakest items and the next due date, all from ItemState and QuizAttempt."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlmodel import Session, select

from app.cards.service import CardLibrary
from app.quiz.bank import QuestionBank
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.scheduling import recall_probability

HISTORY_DAYS = 30


@dataclass(frozen=True)
class TopicProgress:
    card_id: str
    title: str
    items: int
    studied: int
    due: int
    # Mean FSRS recall probability over the topic's items; an item never studied counts 0,
    # so mastery also says how much of the topic has been covered.
    mastery: float


@dataclass(frozen=True)
class WeakItem:
    item_id: str
    card_id: str
    recall: float
    lapses: int


@dataclass(frozen=True)
class Progress:
    topics: list[TopicProgress]
    due_now: int
    next_due: datetime | None
    streak_days: int
    history: list[tuple[date, int, int]]  # day, answers, correct answers
    weakest: list[WeakItem]
    answers: int
    correct: int


def states_of(session: Session, user_id: int) -> list[ItemState]:
    return list(session.exec(select(ItemState).where(ItemState.user_id == user_id)))


def topic_progress(
    bank: QuestionBank, cards: CardLibrary, states: list[ItemState], now: datetime
) -> list[TopicProgress]:
    by_item = {s.item_id: s for s in states}
    rows = []
    for card in cards.all():
        items = bank.for_cards([card.meta.id])
        if not items:
            continue
        seen = [by_item[i.id] for i in items if i.id in by_item]
        recall = sum(recall_probability(s.fsrs_card, now) for s in seen)
        rows.append(
            TopicProgress(
                card_id=card.meta.id,
                title=card.meta.title,
                items=len(items),
                studied=len(seen),
                due=sum(1 for s in seen if s.due <= now),
                mastery=recall / len(items),
            )
        )
    return rows


def streak_days(days: set[date], today: date) -> int:
    """Consecutive days with at least one answer, ending today (or yesterday: today's
    review may not have happened yet)."""
    day = today if today in days else today - timedelta(days=1)
    streak = 0
    while day in days:
        streak += 1
        day -= timedelta(days=1)
    return streak


def progress_of(
    session: Session,
    user_id: int,
    bank: QuestionBank,
    cards: CardLibrary,
    now: datetime | None = None,
) -> Progress:
    now = now or datetime.now(UTC)
    known = {item.id for item in bank.all()}
    states = [s for s in states_of(session, user_id) if s.item_id in known]
    attempts = list(
        session.exec(
            select(QuizAttempt.created_at, QuizAttempt.correct).where(
                QuizAttempt.user_id == user_id
            )
        )
    )
    per_day: Counter[date] = Counter()
    right_per_day: Counter[date] = Counter()
    for created_at, correct in attempts:
        day = created_at.astimezone(UTC).date()
        per_day[day] += 1
        right_per_day[day] += bool(correct)
    today = now.date()
    first = today - timedelta(days=HISTORY_DAYS - 1)
    history = [
        (first + timedelta(days=d), per_day[first + timedelta(days=d)],
         right_per_day[first + timedelta(days=d)])
        for d in range(HISTORY_DAYS)
    ]  # fmt: skip
    cards_of = {item.id: item.card for item in bank.all()}
    weakest = sorted(
        (WeakItem(s.item_id, cards_of[s.item_id], recall_probability(s.fsrs_card, now), s.lapses)
         for s in states),
        key=lambda w: (w.recall, -w.lapses),
    )[:5]  # fmt: skip
    upcoming = [s.due for s in states if s.due > now]
    return Progress(
        topics=topic_progress(bank, cards, states, now),
        due_now=sum(1 for s in states if s.due <= now),
        next_due=min(upcoming) if upcoming else None,
        streak_days=streak_days(set(per_day), today),
        history=history,
        weakest=weakest,
        answers=len(attempts),
        correct=sum(1 for _, c in attempts if c),
    )
