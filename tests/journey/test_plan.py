"""The study plan: steps in order within the minutes a day, reviews from the FSRS scheduler,
a warning and the minutes that would fit when the path does not, and which steps it keeps
(what it names first, with their prerequisites) and leaves out when not all fit."""

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


def test_a_step_that_does_not_fit_is_left_out_and_a_smaller_one_after_it_takes_the_room() -> None:
    steps = [StepWork("a", 30, 0), StepWork("b", 50, 0), StepWork("c", 10, 0)]
    plan = plan_study(TODAY, TODAY + timedelta(days=1), 40, steps)
    assert [day.new_steps for day in plan.days] == [["a", "c"]]
    assert plan.unplaced == ["b"] and plan.left_out_minutes == 50
    assert plan.minutes_needed_per_day == 30 + 50 + 10  # all three in the one day


def test_a_step_named_first_is_kept_with_its_prerequisites_ahead_of_it() -> None:
    # One day of 40 minutes holds two of these 20-minute steps; z needs p.
    steps = [StepWork("p", 20, 0), StepWork("a", 20, 0), StepWork("b", 20, 0),
             StepWork("z", 20, 0, ("p",))]  # fmt: skip
    in_order = plan_study(TODAY, TODAY + timedelta(days=1), 40, steps)
    assert [day.new_steps for day in in_order.days] == [["p", "a"]]
    plan = plan_study(TODAY, TODAY + timedelta(days=1), 40, steps, first=["z"])
    assert [day.new_steps for day in plan.days] == [["p", "z"]]
    assert plan.unplaced == ["a", "b"] and plan.left_out_minutes == 40


def test_what_is_named_first_is_kept_in_that_order_then_the_rest_in_path_order() -> None:
    # The core step d, then the weak topics w2 (the weaker) and w1, as the service names them.
    steps = [StepWork(c, 20, 0) for c in ("a", "w1", "b", "w2", "d")]
    first = ["d", "w2", "w1"]
    three = plan_study(TODAY, TODAY + timedelta(days=1), 60, steps, first=first)
    assert [day.new_steps for day in three.days] == [["w1", "w2", "d"]]  # path order
    assert three.unplaced == ["a", "b"]
    two = plan_study(TODAY, TODAY + timedelta(days=1), 40, steps, first=first)
    assert two.days[0].new_steps == ["w2", "d"] and two.unplaced == ["a", "w1", "b"]
    four = plan_study(TODAY, TODAY + timedelta(days=1), 80, steps, first=first)
    assert four.days[0].new_steps == ["a", "w1", "w2", "d"] and four.unplaced == ["b"]


@st.composite
def paths(draw: st.DrawFn) -> tuple[list[StepWork], list[str]]:
    """Steps in path order, each needing some of the steps before it, and a priority."""
    sizes = draw(st.lists(st.floats(5, 90), max_size=30))
    steps = []
    for i, minutes in enumerate(sizes):
        needs = draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set()
        steps.append(StepWork(f"c{i}", minutes, 5, tuple(f"c{j}" for j in sorted(needs))))
    ids = [s.card_id for s in steps]
    first = draw(st.permutations(ids).map(lambda order: order[: len(order) // 2]))
    return steps, first


@given(days=st.integers(0, 40), minutes=st.integers(10, 240), drawn=paths())
def test_every_step_is_placed_once_after_its_prerequisites_within_the_budget(
    days: int, minutes: int, drawn: tuple[list[StepWork], list[str]]
) -> None:
    steps, first = drawn
    plan = plan_study(TODAY, TODAY + timedelta(days=days), minutes, steps, first=first)
    placed = [c for day in plan.days for c in day.new_steps]
    # Each step once, placed or left out; the placed ones in path order.
    assert sorted(placed + plan.unplaced) == sorted(s.card_id for s in steps)
    assert placed == [s.card_id for s in steps if s.card_id in placed]
    by_id = {s.card_id: s for s in steps}
    assert abs(plan.left_out_minutes - sum(by_id[c].minutes for c in plan.unplaced)) < 1e-6
    for step in (by_id[c] for c in placed):
        assert all(placed.index(p) < placed.index(step.card_id) for p in step.prerequisites)
    for day in plan.days:
        reviews = day.reviews * MINUTES_PER_REVIEW
        assert abs(day.minutes - reviews - sum(by_id[c].minutes for c in day.new_steps)) < 1e-6
        # Over the budget only for one step longer than a whole day.
        if day.minutes > minutes + 1e-9 and day.new_steps:
            assert len(day.new_steps) == 1 and by_id[day.new_steps[0]].minutes > minutes
