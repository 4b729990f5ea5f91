"""Where a learner is on the syllabus, their goal, their plan, and the dashboard's numbers."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlmodel import Session, col, select

from app.cards.models import Card
from app.cards.service import CardLibrary
from app.i18n import N_
from app.journey.models import MAX_MINUTES_PER_DAY, MIN_MINUTES_PER_DAY, StudyGoal
from app.journey.plan import (
    COMPRESSED_STEP_QUESTIONS,
    StepWork,
    StudyPlan,
    plan_study,
    step_minutes,
)
from app.journey.syllabus import LEVELS, STEP_QUESTIONS, Level, Step, steps
from app.quiz.bank import QuestionBank
from app.quiz.items import GRADED_KINDS
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.progress import (
    Progress,
    TopicProgress,
    pooled_mastery,
    topic_progress,
    weakest_topics,
)

MAX_PLAN_DAYS_AHEAD = 365
# The interview core: the level a "design the run" question draws on, kept first by the plan.
CORE_LEVEL = "design"


def today_utc() -> date:
    return datetime.now(UTC).date()


@lru_cache(maxsize=8)  # a bank is loaded once per app; keyed on the bank itself
def _graded_per_card(bank: QuestionBank) -> dict[str, int]:
    # Counted once: the dashboard asks for every card of the path, and the plan again.
    counts: dict[str, int] = defaultdict(int)
    for item in bank.all():
        if item.kind in GRADED_KINDS:
            counts[item.card] += 1
    return dict(counts)


def questions_to_finish(bank: QuestionBank, card_id: str, compressed: bool = False) -> int:
    """How many of a card's graded questions a learner answers right to finish its step (a
    compressed step, COMPRESSED_STEP_QUESTIONS)."""
    graded = _graded_per_card(bank).get(card_id, 0)
    return min(COMPRESSED_STEP_QUESTIONS if compressed else STEP_QUESTIONS, graded)


def answered_right(session: Session, user_id: int) -> set[str]:
    """Items the user has answered right at least once (in a mock interview too)."""
    return set(session.exec(
        select(QuizAttempt.item_id).where(QuizAttempt.user_id == user_id, col(QuizAttempt.correct))
    ))  # fmt: skip


def completed_cards(
    session: Session, user_id: int, bank: QuestionBank, compressed: bool = False
) -> set[str]:
    """Cards whose step is done: enough of their questions answered right."""
    right = answered_right(session, user_id)
    per_card: dict[str, int] = defaultdict(int)
    for item in bank.all():
        if item.id in right:
            per_card[item.card] += 1
    return {c for c, n in per_card.items() if n >= questions_to_finish(bank, c, compressed)}


@dataclass(frozen=True)
class Position:
    steps: list[Step]
    done: set[str]
    compressed: bool = False  # the learner's plan takes compressed steps

    @property
    def next_step(self) -> Step | None:
        return next((s for s in self.steps if s.card_id not in self.done), None)

    def next_after(self, step: Step) -> Step | None:
        """Where to go once `step` is done: the first step after it not done yet, else the
        first one before it (a step skipped earlier); None when every step is done."""
        later = (s for s in self.steps[step.number :] if s.card_id not in self.done)
        return next(later, self.next_step)

    def done_in(self, level: Level) -> int:
        return sum(1 for c in level.cards if c in self.done)

    def steps_in(self, level: Level) -> list[Step]:
        """The level's steps, in path order (the path page lists them level by level)."""
        return [s for s in self.steps if s.level.key == level.key]


def position_of(session: Session | None, user_id: int | None, bank: QuestionBank,
                library: CardLibrary, lang: str = "en") -> Position:  # fmt: skip
    """The path in `lang`, with the user's finished steps (none for a visitor): compressed
    steps when their plan takes them."""
    if session is None or user_id is None:
        return Position(steps(library, lang), set())
    return position_with_goal(session, user_id, goal_of(session, user_id), bank, library, lang)


def position_with_goal(
    session: Session,
    user_id: int,
    goal: StudyGoal | None,
    bank: QuestionBank,
    library: CardLibrary,
    lang: str = "en",
) -> Position:
    """position_of for a learner whose goal the caller has read already."""
    compressed = goal is not None and goal.compressed
    done = completed_cards(session, user_id, bank, compressed)
    return Position(steps(library, lang), done, compressed)


class GoalForm(BaseModel):
    """The plan form: an interview date after today, and the minutes a day to study."""

    model_config = ConfigDict(extra="ignore")

    interview_date: date
    minutes_per_day: int = Field(ge=MIN_MINUTES_PER_DAY, le=MAX_MINUTES_PER_DAY)
    compressed: bool = False  # whole steps unless the learner picks compressed ones

    @model_validator(mode="after")
    def _ahead(self) -> GoalForm:
        days = (self.interview_date - today_utc()).days
        if days < 1:
            raise ValueError("the interview date must be after today")
        if days > MAX_PLAN_DAYS_AHEAD:
            raise ValueError(f"plan at most {MAX_PLAN_DAYS_AHEAD} days ahead")
        return self


GOAL_LABELS = {"interview_date": "Interview date", "minutes_per_day": "Minutes per day",
               "compressed": N_("Each step")}  # fmt: skip


def goal_of(session: Session, user_id: int) -> StudyGoal | None:
    return session.exec(select(StudyGoal).where(StudyGoal.user_id == user_id)).first()


def set_goal(session: Session, user_id: int, form: GoalForm) -> StudyGoal:
    goal = goal_of(session, user_id) or StudyGoal(
        user_id=user_id, interview_date=form.interview_date, minutes_per_day=form.minutes_per_day
    )
    goal.interview_date = form.interview_date
    goal.minutes_per_day = form.minutes_per_day
    goal.compressed = form.compressed
    goal.updated_at = datetime.now(UTC)
    session.add(goal)
    session.commit()
    session.refresh(goal)
    return goal


def compressed_words(card: Card) -> int:
    """The words a compressed step reads: the card's first two sections, the 30-second answer
    and the derivation after it (headings included, as a whole step counts them)."""
    lines = [line.strip() for line in card.text.splitlines()]
    start = lines.index(f"## {card.sections[0]}")
    end = lines.index(f"## {card.sections[2]}") if len(card.sections) > 2 else len(lines)
    return len(" ".join(lines[start:end]).split())


def step_work(step: Step, bank: QuestionBank, library: CardLibrary, compressed: bool) -> StepWork:
    """A step's minutes and questions, whole or compressed, and the cards it needs first.
    Reading time is the English card's length in any language: a Chinese edition has no
    spaces to count words by, and says the same things."""
    english = library.get(step.card_id) or step.card
    n = questions_to_finish(bank, step.card_id, compressed)
    words = compressed_words(english) if compressed else _word_count(english.text)
    return StepWork(step.card_id, step_minutes(words, n), n, tuple(english.meta.prerequisites))


@lru_cache(maxsize=512)  # every card's text, counted once, not on each plan shown
def _word_count(text: str) -> int:
    return len(text.split())


def plan_priority(
    bank: QuestionBank,
    library: CardLibrary,
    states: list[ItemState],
    now: datetime,
    topics: list[TopicProgress] | None = None,
) -> list[str]:
    """The steps a plan keeps first when not all fit: the Design level (the interview core) in
    path order, then every topic the learner has answered, lowest mastery first
    (app.quiz.progress's figure and order, as the dashboard's weakest topics). `topics`: the
    learner's topic_progress where the caller has it already (the dashboard does)."""
    core = next(level for level in LEVELS if level.key == CORE_LEVEL).cards
    if topics is None:
        topics = topic_progress(bank, library, states, now)
    weakest = [t.card_id for t in weakest_topics(topics, limit=len(topics))]
    return list(dict.fromkeys([*core, *weakest]))


def plan_for(
    goal: StudyGoal,
    position: Position,
    bank: QuestionBank,
    library: CardLibrary,
    states: Iterable[ItemState],
    today: date | None = None,
    topics: list[TopicProgress] | None = None,
) -> StudyPlan:
    """The plan from today: the steps not done yet (compressed if the goal says so), and the
    reviews the learner's item states (app.quiz.review_queue.states_of) bring due; when the
    steps do not all fit, plan_priority's steps are kept first (`topics`: as plan_priority)."""
    states = list(states)
    work = [step_work(s, bank, library, goal.compressed)
            for s in position.steps if s.card_id not in position.done]  # fmt: skip
    known = {item.id for item in bank.all()}
    due = [s.due.astimezone(UTC).date() for s in states if s.item_id in known]
    first = plan_priority(bank, library, states, datetime.now(UTC), topics)
    return _planned(today or today_utc(), goal.interview_date, goal.minutes_per_day,
                    tuple(work), tuple(sorted(due)), tuple(first))  # fmt: skip


@lru_cache(maxsize=256)
def _planned(today: date, interview: date, minutes_per_day: int, work: tuple[StepWork, ...],
             due: tuple[date, ...], first: tuple[str, ...]) -> StudyPlan:  # fmt: skip
    """plan_study, made once per learner's state: the dashboard and the plan page show the same
    plan until an answer, a finished step or a new day changes what it is made from (`due` in
    order: plan_study counts the dates, whatever their order). The plan is shared: read it,
    never change it."""
    return plan_study(today, interview, minutes_per_day, work, due, first)


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
