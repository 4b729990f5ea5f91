"""Where a learner stands: mastery per topic (card), due counts, streak, daily history,
weakest items and the next due date, all from ItemState and QuizAttempt.

Mastery is one figure wherever it is shown (progress, dashboard, study groups): `mastery_of`
a set of items, `pooled_mastery` for several topics together."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import NamedTuple

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from app.cards.service import CardLibrary
from app.quiz.bank import QuestionBank
from app.quiz.models import DesignAttempt, ItemState, QuizAttempt
from app.quiz.review_queue import (
    Scheduled,
    askable_items,
    coming_back,
    new_left_today,
    schedule_of,
    states_of,
)
from app.quiz.scheduling import SCHEDULER, recall_changes_after, recall_probability

HISTORY_DAYS = 30

# Mastery looks a week ahead. py-fsrs counts whole days since the last review, so recall "now"
# is exactly 1 for every item answered in the last 24 hours, right or wrong: mastery read 100 %
# after 2 right answers of 13 (issue #29). A week out, FSRS-6's default parameters give a new
# item answered wrong (Again, stability w0 = 0.21 days) 58 % and one answered right (Good,
# w2 = 2.31 days) 81 %.
MASTERY_HORIZON = timedelta(days=7)


def recall_in_a_week(state: ItemState, now: datetime) -> float:
    """FSRS's predicted chance of recalling the item a week from `now`, if it is not reviewed
    before then: the scheduler's own forgetting curve (app.quiz.scheduling.recall_probability)."""
    return recall_probability(state.fsrs_card, now + MASTERY_HORIZON)


def unchanged_until(states: Iterable[ItemState], now: datetime) -> datetime:
    """Until when what progress_of and the plan show from `states` at `now` stays true if
    nothing is written meanwhile: the next review falling due (due now), the next UTC midnight
    (today's reviews, the streak, the plan's today) and the next step of any item's recall a
    week ahead (mastery, the weakest items). A page kept for a learner is kept no longer."""
    midnight = datetime.combine(now.astimezone(UTC).date() + timedelta(days=1), time(), UTC)
    times = [midnight]
    for state in states:
        if state.due > now:
            times.append(state.due)
        step = recall_changes_after(state.fsrs_card, now + MASTERY_HORIZON)
        if step is not None:
            times.append(step - MASTERY_HORIZON)
    return min(times)


def mastery_of(states: Iterable[ItemState], now: datetime) -> float | None:
    """The mastery of a set of items: recall_in_a_week averaged over the items the learner has
    answered (`states`), None when there are none. Items never answered are not in it: pages
    show them apart (answered of total), so they count neither as mastered nor as forgotten."""
    recalls = [recall_in_a_week(s, now) for s in states]
    return sum(recalls) / len(recalls) if recalls else None


@dataclass(frozen=True)
class TopicProgress:
    card_id: str
    title: str
    items: int
    studied: int  # items answered at least once
    due: int
    mastery: float | None  # mastery_of the studied items; None when none is


def pooled_mastery(topics: Iterable[TopicProgress]) -> float | None:
    """The mastery of several topics' items together: each topic's figure weighted by its
    studied items, which is mastery_of all their studied items."""
    weighted = [(t.mastery, t.studied) for t in topics if t.mastery is not None]
    n = sum(studied for _, studied in weighted)
    return sum(m * studied for m, studied in weighted) / n if n else None


def weakest_topics(topics: Iterable[TopicProgress], limit: int = 3) -> list[TopicProgress]:
    """The studied topics of lowest mastery, lowest first."""
    studied = [t for t in topics if t.mastery is not None]
    return sorted(studied, key=lambda t: (t.mastery, t.card_id))[:limit]


@dataclass(frozen=True)
class WeakItem:
    item_id: str
    card_id: str
    recall: float  # recall_in_a_week
    lapses: int


@dataclass(frozen=True)
class DueReviews:
    """Reviews due at two moments, so that pages never show one for the other."""

    now: int  # what the daily review serves at this moment
    by_end_of_today: int  # before the next UTC midnight, the ones due now included


def due_reviews(states: Iterable[ItemState], now: datetime) -> DueReviews:
    # A UTC day, as the study plan's days, the streak and the new-items cap count them.
    dues = [s.due for s in states]
    today = now.astimezone(UTC).date()
    return DueReviews(
        now=sum(1 for due in dues if due <= now),
        by_end_of_today=sum(1 for due in dues if due.astimezone(UTC).date() <= today),
    )


@dataclass(frozen=True)
class Progress:
    topics: list[TopicProgress]
    due_now: int
    due_today: int  # by the end of today, due_now included: the study plan's reviews today
    next_due: datetime | None
    streak_days: int
    history: list[tuple[date, int, int]]  # day, answers, correct answers
    weakest: list[WeakItem]
    answers: int
    correct: int


def recent_designs(session: Session, user_id: int, limit: int = 20) -> list[DesignAttempt]:
    """The user's "design the run" answers, newest first."""
    statement = (
        select(DesignAttempt)
        .where(DesignAttempt.user_id == user_id)
        .order_by(col(DesignAttempt.created_at).desc(), col(DesignAttempt.id).desc())
        .limit(limit)
    )
    return list(session.exec(statement))


def topic_progress(
    bank: QuestionBank,
    cards: CardLibrary,
    states: list[ItemState],
    now: datetime,
    lang: str = "en",
) -> list[TopicProgress]:
    """Each topic under its card's title in `lang` (its edition there, else English)."""
    by_item = {s.item_id: s for s in states}
    rows = []
    for card in cards.in_language(lang):
        items = bank.for_cards([card.meta.id])
        if not items:
            continue
        seen = [by_item[i.id] for i in items if i.id in by_item]
        rows.append(
            TopicProgress(
                card_id=card.meta.id,
                title=card.meta.title,
                items=len(items),
                studied=len(seen),
                due=sum(1 for s in seen if s.due <= now),
                mastery=mastery_of(seen, now),
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
    states: Sequence[ItemState] | None = None,
    lang: str = "en",
) -> Progress:
    """`states`: the user's ItemState rows where the caller has read them already; `lang`: the
    language of the topics' titles."""
    now = now or datetime.now(UTC)
    known = {item.id for item in bank.all()}
    if states is None:
        states = states_of(session, user_id)
    states = [s for s in states if s.item_id in known]
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
        (WeakItem(s.item_id, cards_of[s.item_id], recall_in_a_week(s, now), s.lapses)
         for s in states),
        key=lambda w: (w.recall, -w.lapses, w.item_id),
    )[:5]  # fmt: skip
    upcoming = [s.due for s in states if s.due > now]
    due = due_reviews(states, now)
    return Progress(
        topics=topic_progress(bank, cards, states, now, lang),
        due_now=due.now,
        due_today=due.by_end_of_today,
        next_due=min(upcoming) if upcoming else None,
        streak_days=streak_days(set(per_day), today),
        history=history,
        weakest=weakest,
        answers=len(attempts),
        correct=sum(1 for _, c in attempts if c),
    )


@dataclass(frozen=True)
class ReviewCount:
    """Where today's review of a topic stands: answers given today, and what is left of it
    (the items due now and the items never answered, which the review serves after them)."""

    done: int
    due: int
    new: int

    @property
    def total(self) -> int:
        return self.done + self.due + self.new


def _today_start(now: datetime) -> datetime:
    return datetime(now.year, now.month, now.day, tzinfo=UTC)


# Built once: every question page and answer runs it (app/quiz/review_queue.py says why).
_ANSWERS_SINCE = select(QuizAttempt.item_id, QuizAttempt.correct, QuizAttempt.duration_ms).where(
    QuizAttempt.user_id == bindparam("user_id"),
    col(QuizAttempt.created_at) >= bindparam("start"),
    col(QuizAttempt.mock_id).is_(None),
)


class _AnswerToday(NamedTuple):
    item_id: str
    correct: bool
    duration_ms: int | None


def _attempts_today(
    session: Session, user_id: int, item_ids: set[str], now: datetime
) -> list[_AnswerToday]:
    """Today's (UTC) answers to these items, outside mock interviews: the three columns the
    review's counts and results read, not whole rows (a row's JSON columns cost more to read
    than the rest of a review page)."""
    params = {"user_id": user_id, "start": _today_start(now)}
    return [_AnswerToday(*a) for a in session.exec(_ANSWERS_SINCE, params=params)
            if a.item_id in item_ids]  # fmt: skip


def review_count(
    session: Session, user_id: int, bank: QuestionBank, card_ids: list[str],
    now: datetime | None = None, new_left: int | None = None,
    states_read: Sequence[Scheduled] | None = None, suspended: set[str] | None = None,
) -> ReviewCount:  # fmt: skip
    """Counts for the review's progress bar: an answer moves an item from due or new to
    done; a wrong one counts as due again at once (the review asks it again before it ends,
    review_queue.coming_back), so the total grows by one.
    `new_left` is new_left_today's count, `states_read` the user's schedule_of and
    `suspended` their suspended items, where the caller has them already (from next_item's
    page)."""
    now = now or datetime.now(UTC)
    if new_left is None:
        new_left = new_left_today(session, user_id, now)
    if states_read is None:
        states_read = schedule_of(session, user_id)
    item_ids = {item.id for item in askable_items(session, user_id, bank, card_ids, suspended)}
    states = [s for s in states_read if s.item_id in item_ids]
    return ReviewCount(
        done=len(_attempts_today(session, user_id, item_ids, now)),
        due=sum(1 for s in states if s.due <= now)
        + len(coming_back(session, user_id, states, now)),
        new=min(len(item_ids) - len(states), new_left),
    )


@dataclass(frozen=True)
class CardToReview:
    card_id: str
    title: str
    recall: float  # mean FSRS recall of the card's items answered so far
    wrong_today: int


@dataclass(frozen=True)
class ReviewResults:
    """Today's review of a topic, once nothing is left: the score, the time per answer, the
    next due date, and the weak cards to read again (a wrong answer today first)."""

    answers: int
    correct: int
    mean_duration_s: float | None  # over the answers whose time is known
    total_duration_s: float
    next_due: datetime | None
    review_next: list[CardToReview]


def review_results(
    session: Session, user_id: int, bank: QuestionBank, card_ids: list[str],
    titles: dict[str, str], now: datetime | None = None, limit: int = 5,
) -> ReviewResults:  # fmt: skip
    now = now or datetime.now(UTC)
    items = bank.for_cards(card_ids)
    card_of = {item.id: item.card for item in items}
    today = _attempts_today(session, user_id, set(card_of), now)
    durations = [a.duration_ms / 1000 for a in today if a.duration_ms is not None]
    wrong_today = Counter(card_of[a.item_id] for a in today if not a.correct)
    recalls: dict[str, list[float]] = {}
    states = [s for s in states_of(session, user_id) if s.item_id in card_of]
    for s in states:
        recalls.setdefault(card_of[s.item_id], []).append(recall_probability(s.fsrs_card, now))
    # Weak: a wrong answer today, or below the recall the scheduler aims for (so due soon).
    weakest = sorted(
        (CardToReview(card, titles.get(card, card), sum(r) / len(r), wrong_today[card])
         for card, r in recalls.items()),
        key=lambda c: (-c.wrong_today, c.recall, c.card_id),
    )  # fmt: skip
    weakest = [c for c in weakest if c.wrong_today or c.recall < SCHEDULER.desired_retention]
    upcoming = [s.due for s in states if s.due > now]
    return ReviewResults(
        answers=len(today),
        correct=sum(1 for a in today if a.correct),
        mean_duration_s=sum(durations) / len(durations) if durations else None,
        total_duration_s=sum(durations),
        next_due=min(upcoming) if upcoming else None,
        review_next=weakest[:limit],
    )
