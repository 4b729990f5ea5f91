"""A study plan to an interview date: which new steps of the syllabus to take on which day,
and how many FSRS reviews fall due each day, within the minutes the learner has per day.

The plan is made again from the learner's state whenever it is shown, so a missed day is not
a broken plan: its steps are still ahead, spread over the days left, and the plan says when
they no longer fit (and how many minutes a day would make them fit).

When every step fits, the plan takes them in path order. When they do not, it keeps what an
interview needs most and lists the rest as left out, never dropping a step silently:

1. Priority: the steps named `first`, in that order (the service names the Design level, the
   interview core, then the topics the learner has answered, lowest mastery first), then every
   other step in path order.
2. Walking that order, a step joins the plan together with its prerequisites not in it yet,
   if the plan with them all still fits; if not, the step is left out and the walk goes on, so
   a smaller step further down may still use the room. A step is never kept without its
   prerequisites.
3. The kept steps go on the calendar in path order, which puts prerequisites first.

Reviews are forecast with the app's own FSRS scheduler: an item first answered on day d (and
recalled every time, rated Good) falls due on the days its chain of intervals gives, and an
item already in review falls due on its stored date, then follows the same chain. Recalling
every time is the optimistic case; a lapse adds reviews the forecast does not show.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cache

from fsrs import Rating

from app.quiz.scheduling import new_card, review

READING_WORDS_PER_MINUTE = 150  # technical prose with math, read to be able to explain it
CALCULATOR_AND_DEMO_MINUTES = 6  # try the worked example's inputs, run the demo once
MINUTES_PER_QUESTION = 1.0  # a first answer, with the card fresh
MINUTES_PER_REVIEW = 0.5  # most reviews are one choice or one number
MOCK_DAY_MIN_DAYS = 3  # with at least this many days, keep the last for a mock interview
MAX_PLAN_DAYS = 366
# A compressed step reads the 30-second answer and the derivation after it, works the numbers
# and runs the demo as a whole step does, and answers this many questions (a whole step
# answers app.journey.syllabus.STEP_QUESTIONS): one to say the answer, one to use the formula.
COMPRESSED_STEP_QUESTIONS = 2


@dataclass(frozen=True)
class StepWork:
    """What one syllabus step asks of a learner who has not done it."""

    card_id: str
    minutes: float
    items: int  # its questions, which then come back as reviews
    prerequisites: tuple[str, ...] = ()  # cards it needs first (those done are not steps)


@dataclass
class PlanDay:
    day: date
    reviews: int = 0
    new_steps: list[str] = field(default_factory=list)
    minutes: float = 0.0
    mock_interview: bool = False


@dataclass(frozen=True)
class StudyPlan:
    days: list[PlanDay]
    unplaced: list[str]  # steps left out: they do not fit before the interview (path order)
    minutes_per_day: int
    minutes_needed_per_day: int | None  # the least that fits everything (None: it fits)
    left_out_minutes: float = 0.0  # the left-out steps' minutes together

    @property
    def fits(self) -> bool:
        return not self.unplaced

    def today(self) -> PlanDay | None:
        return self.days[0] if self.days else None


def step_minutes(words: int, questions: int) -> float:
    """A step's minutes: reading `words`, the calculator and the demo, `questions` answers.
    A compressed step is priced by the same sum over its shorter reading and fewer questions."""
    return (
        words / READING_WORDS_PER_MINUTE
        + CALCULATOR_AND_DEMO_MINUTES
        + (questions * MINUTES_PER_QUESTION)
    )


@cache
def review_offsets(horizon_days: int = MAX_PLAN_DAYS) -> tuple[int, ...]:
    """Days after the first answer on which an item recalled every time falls due again."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    card, when, offsets = new_card(1, start), start, []
    while True:
        card = review(card, Rating.Good, when)
        when = card.due
        days = (card.due.date() - start.date()).days
        if days > horizon_days:
            return tuple(offsets)
        if days > 0:  # a same-day learning step is part of the step itself
            offsets.append(days)


def plan_study(
    today: date,
    interview: date,
    minutes_per_day: int,
    steps: Sequence[StepWork],
    due_dates: Iterable[date] = (),
    first: Sequence[str] = (),
) -> StudyPlan:
    """Days from today to the day before the interview. `steps` are in path order (each after
    its prerequisites); when they do not all fit, `first` names the steps to keep before the
    others (the module's docstring gives the whole rule)."""
    reviews = _reviews_due(today, due_dates)
    days, unplaced = _schedule(today, interview, minutes_per_day, steps, reviews)
    if not unplaced:
        return StudyPlan(days, [], minutes_per_day, None)
    kept = _kept_by_priority(today, interview, minutes_per_day, steps, reviews, first)
    chosen = [s for s in steps if s.card_id in kept]
    days, _ = _schedule(today, interview, minutes_per_day, chosen, reviews)
    left_out = [s for s in steps if s.card_id not in kept]
    needed = _least_minutes_that_fit(today, interview, steps, reviews)
    return StudyPlan(days, [s.card_id for s in left_out], minutes_per_day, needed,
                     sum(s.minutes for s in left_out))  # fmt: skip


def _with_prerequisites(card_id: str, steps: Sequence[StepWork]) -> set[str]:
    """The step and every step it needs, directly or through another."""
    by_id = {s.card_id: s for s in steps}
    found: set[str] = set()
    wanted = [card_id]
    while wanted:
        current = wanted.pop()
        if current in by_id and current not in found:
            found.add(current)
            wanted.extend(by_id[current].prerequisites)
    return found


def _kept_by_priority(
    today: date, interview: date, minutes_per_day: int, steps: Sequence[StepWork],
    reviews: Counter[int], first: Sequence[str],
) -> set[str]:  # fmt: skip
    path = [s.card_id for s in steps]
    kept: set[str] = set()
    for card_id in dict.fromkeys([*(c for c in first if c in path), *path]):
        if card_id in kept:
            continue
        joining = _with_prerequisites(card_id, steps) - kept
        trial = [s for s in steps if s.card_id in kept or s.card_id in joining]
        if not _schedule(today, interview, minutes_per_day, trial, reviews)[1]:
            kept |= joining
    return kept


def _reviews_due(today: date, due_dates: Iterable[date]) -> Counter[int]:
    """Reviews of items already answered, by day from today (0: today)."""
    reviews: Counter[int] = Counter()
    for due in due_dates:
        first = max((due - today).days, 0)
        reviews[first] += 1
        for offset in review_offsets():
            reviews[first + offset] += 1
    return reviews


def _schedule(
    today: date, interview: date, minutes_per_day: int, steps: Sequence[StepWork],
    due_reviews: Counter[int],
) -> tuple[list[PlanDay], list[str]]:  # fmt: skip
    count = min(max((interview - today).days, 0), MAX_PLAN_DAYS)
    days = [PlanDay(today + timedelta(days=i)) for i in range(count)]
    if count >= MOCK_DAY_MIN_DAYS:
        days[-1].mock_interview = True
    reviews = due_reviews.copy()
    pending = list(steps)
    for i, plan_day in enumerate(days):
        plan_day.reviews = reviews[i]
        plan_day.minutes = reviews[i] * MINUTES_PER_REVIEW
        if plan_day.mock_interview:
            continue
        while pending:
            step = pending[0]
            room = minutes_per_day - plan_day.minutes
            # A step longer than a whole day takes a day to itself rather than never fitting.
            if step.minutes > room and (plan_day.new_steps or step.minutes <= minutes_per_day):
                break
            pending.pop(0)
            plan_day.new_steps.append(step.card_id)
            plan_day.minutes += step.minutes
            for offset in review_offsets():
                if i + offset < len(days):
                    reviews[i + offset] += step.items
    return days, [s.card_id for s in pending]


def _least_minutes_that_fit(
    today: date, interview: date, steps: Sequence[StepWork], due_reviews: Counter[int]
) -> int | None:
    low, high = 1, 24 * 60
    if _schedule(today, interview, high, steps, due_reviews)[1]:
        return None  # not even a whole day each day: too few days left
    while low < high:
        middle = (low + high) // 2
        if _schedule(today, interview, middle, steps, due_reviews)[1]:
            low = middle + 1
        else:
            high = middle
    return low
