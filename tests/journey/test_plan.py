"""The study plan: steps in order within the minutes a day, reviews from the FSRS scheduler,
a warning and the minutes that would fit when the path does not."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import given
from hypothesis import strategies as st

from app.journey.plan import (
    MINUTES_PER_REVIEW,
    StepWork,
    plan_study,
    review_offsets,
    step_minutes,
)

TODAY = date(2026, 11, 25)


def path(n: int, minutes: float = 17, items: int = 5) -> list[StepWork]:
    return [StepWork(f"card-{i}", minutes, items) for i in range(n)]


def test_review_offsets_come_from_the_apps_fsrs_scheduler() -> None:
    # A first Good answer schedules a 10-minute learning step (the same day, part of the step),
    # then 2 days; every later interval is longer than the one before.
    offsets = review_offsets()
    assert offsets[0] == 2
    gaps = [b - a for a, b in zip((0, *offsets), offsets, strict=False)]
    assert all(later > earlier for earlier, later in zip(gaps, gaps[1:], strict=False))


def test_a_step_takes_reading_hands_on_and_question_time() -> None:
    assert step_minutes(1500, 5) == 1500 / 150 + 6 + 5


def test_steps_fill_each_day_in_order_and_bring_their_reviews_back() -> None:
    plan = plan_study(TODAY, TODAY + timedelta(days=10), 60, path(9))
    assert plan.fits and plan.minutes_needed_per_day is None
    placed = [c for day in plan.days for c in day.new_steps]
    assert placed == [f"card-{i}" for i in range(9)]
    assert plan.days[0].new_steps == ["card-0", "card-1", "card-2"]  # 3 × 17 min in 60
    first_review = review_offsets()[0]
    assert plan.days[first_review].reviews == 3 * 5  # day 0's 15 questions come back
    assert plan.days[-1].mock_interview and not plan.days[-1].new_steps


def test_reviews_already_due_come_first_and_overdue_ones_today() -> None:
    plan = plan_study(TODAY, TODAY + timedelta(days=5), 30,
                      path(1), due_dates=[TODAY - timedelta(days=3)] * 20)  # fmt: skip
    assert plan.days[0].reviews == 20
    assert plan.days[0].minutes == 20 * MINUTES_PER_REVIEW + 17


def test_a_path_that_does_not_fit_says_so_and_how_many_minutes_would() -> None:
    plan = plan_study(TODAY, TODAY + timedelta(days=4), 30, path(10))
    assert not plan.fits and plan.unplaced
    needed = plan.minutes_needed_per_day
    assert needed is not None and needed > 30
    assert plan_study(TODAY, TODAY + timedelta(days=4), needed, path(10)).fits
    assert not plan_study(TODAY, TODAY + timedelta(days=4), needed - 1, path(10)).fits


def test_a_missed_day_moves_its_steps_onto_the_days_left() -> None:
    on_time = plan_study(TODAY, TODAY + timedelta(days=8), 40, path(8))
    late = plan_study(TODAY + timedelta(days=2), TODAY + timedelta(days=8), 40, path(8))
    assert on_time.fits and len(late.days) == len(on_time.days) - 2
    assert sum(len(d.new_steps) for d in late.days) + len(late.unplaced) == 8


def test_a_step_longer_than_a_day_takes_a_day_to_itself() -> None:
    plan = plan_study(TODAY, TODAY + timedelta(days=5), 20, path(2, minutes=45))
    assert plan.days[0].new_steps == ["card-0"] and plan.days[1].new_steps == ["card-1"]


def test_no_days_left_plans_nothing() -> None:
    plan = plan_study(TODAY, TODAY, 60, path(3))
    assert plan.days == [] and plan.unplaced == ["card-0", "card-1", "card-2"]


@given(
    days=st.integers(0, 40),
    minutes=st.integers(10, 240),
    sizes=st.lists(st.floats(5, 90), max_size=30),
)
def test_every_step_is_placed_once_in_order_within_the_budget(
    days: int, minutes: int, sizes: list[float]
) -> None:
    steps = [StepWork(f"c{i}", m, 5) for i, m in enumerate(sizes)]
    plan = plan_study(TODAY, TODAY + timedelta(days=days), minutes, steps)
    placed = [c for day in plan.days for c in day.new_steps]
    assert placed + plan.unplaced == [s.card_id for s in steps]
    by_id = {s.card_id: s for s in steps}
    for day in plan.days:
        reviews = day.reviews * MINUTES_PER_REVIEW
        assert abs(day.minutes - reviews - sum(by_id[c].minutes for c in day.new_steps)) < 1e-6
        # Over the budget only for one step longer than a whole day.
        if day.minutes > minutes + 1e-9 and day.new_steps:
            assert len(day.new_steps) == 1 and by_id[day.new_steps[0]].minutes > minutes
