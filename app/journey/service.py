"""Where a learner is on the syllabus, their goal, their plan, and the dashboard's numbers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlmodel import Session, col, select

from app.cards.service import CardLibrary
from app.journey.models import MAX_MINUTES_PER_DAY, MIN_MINUTES_PER_DAY, StudyGoal
from app.journey.plan import StepWork, StudyPlan, plan_study, step_minutes
from app.journey.syllabus import LEVELS, STEP_QUESTIONS, Level, Step, steps
from app.quiz.bank import GRADED_KINDS, QuestionBank
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.progress import Progress, pooled_mastery

MAX_PLAN_DAYS_AHEAD = 365


def today_utc() -> date:
    return datetime.now(UTC).date()


def questions_to_finish(bank: QuestionBank, card_id: str) -> int:
    """How many of a card's graded questions a learner answers right to finish its step."""
    graded = [i for i in bank.for_cards([card_id]) if i.kind in GRADED_KINDS]
    return min(STEP_QUESTIONS, len(graded))


def answered_right(session: Session, user_id: int) -> set[str]:
    """Items the user has answered right at least once (in a mock interview too)."""
    return set(session.exec(
        select(QuizAttempt.item_id).where(QuizAttempt.user_id == user_id, col(QuizAttempt.correct))
    ))  # fmt: skip


def completed_cards(session: Session, user_id: int, bank: QuestionBank) -> set[str]:
    """Cards whose step is done: enough of their questions answered right."""
    right = answered_right(session, user_id)
    per_card: dict[str, int] = defaultdict(int)
    for item in bank.all():
        if item.id in right:
            per_card[item.card] += 1
    return {card for card, n in per_card.items() if n >= questions_to_finish(bank, card)}


@dataclass(frozen=True)
class Position:
    steps: list[Step]
    done: set[str]

    @property
    def next_step(self) -> Step | None:
        return next((s for s in self.steps if s.card_id not in self.done), None)

    def done_in(self, level: Level) -> int:
        return sum(1 for c in level.cards if c in self.done)


def position_of(session: Session | None, user_id: int | None, bank: QuestionBank,
                library: CardLibrary, lang: str = "en") -> Position:  # fmt: skip
    """The path in `lang`, with the user's finished steps (none for a visitor)."""
    done = set() if session is None or user_id is None else completed_cards(session, user_id, bank)
    return Position(steps(library, lang), done)


class GoalForm(BaseModel):
    """The plan form: an interview date after today, and the minutes a day to study."""

    model_config = ConfigDict(extra="ignore")

    interview_date: date
    minutes_per_day: int = Field(ge=MIN_MINUTES_PER_DAY, le=MAX_MINUTES_PER_DAY)

    @model_validator(mode="after")
    def _ahead(self) -> GoalForm:
        days = (self.interview_date - today_utc()).days
        if days < 1:
            raise ValueError("the interview date must be after today")
        if days > MAX_PLAN_DAYS_AHEAD:
            raise ValueError(f"plan at most {MAX_PLAN_DAYS_AHEAD} days ahead")
        return self


GOAL_LABELS = {"interview_date": "Interview date", "minutes_per_day": "Minutes per day"}


def goal_of(session: Session, user_id: int) -> StudyGoal | None:
    return session.exec(select(StudyGoal).where(StudyGoal.user_id == user_id)).first()


def set_goal(session: Session, user_id: int, form: GoalForm) -> StudyGoal:
    goal = goal_of(session, user_id) or StudyGoal(
        user_id=user_id, interview_date=form.interview_date, minutes_per_day=form.minutes_per_day
    )
    goal.interview_date = form.interview_date
    goal.minutes_per_day = form.minutes_per_day
    goal.updated_at = datetime.now(UTC)
    session.add(goal)
    session.commit()
    session.refresh(goal)
    return goal


def plan_for(
    goal: StudyGoal,
    position: Position,
    bank: QuestionBank,
    library: CardLibrary,
    states: Iterable[ItemState],
    today: date | None = None,
) -> StudyPlan:
    """The plan from today: the steps not done yet, in order, and the reviews the learner's
    item states (app.quiz.review_queue.states_of) bring due. Reading time is the English card's
    length in any language: a Chinese edition has no spaces to count words by, and says the
    same things."""
    work = []
    for step in position.steps:
        if step.card_id in position.done:
            continue
        english = library.get(step.card_id)
        words = len((english or step.card).text.split())
        n = questions_to_finish(bank, step.card_id)
        work.append(StepWork(step.card_id, step_minutes(words, n), n))
    known = {item.id for item in bank.all()}
    due = [s.due.astimezone(UTC).date() for s in states if s.item_id in known]
    return plan_study(today or today_utc(), goal.interview_date, goal.minutes_per_day, work, due)


@dataclass(frozen=True)
class LevelMastery:
    level: Level
    mastery: float | None  # app.quiz.progress.pooled_mastery of the level's topics
    studied: int  # questions answered at least once
    items: int
    done: int
    steps: int


def level_mastery(progress: Progress, position: Position) -> list[LevelMastery]:
    by_card = {t.card_id: t for t in progress.topics}
    rows = []
    for level in LEVELS:
        topics = [by_card[c] for c in level.cards if c in by_card]
        rows.append(LevelMastery(level, pooled_mastery(topics), sum(t.studied for t in topics),
                                 sum(t.items for t in topics), position.done_in(level),
                                 len(level.cards)))  # fmt: skip
    return rows
