"""Pipeline generators against the papers' closed forms, and every item using them answerable."""

from __future__ import annotations

import pytest

from app.quiz.generators import GENERATORS
from app.quiz.generators.pipeline import SCHEDULE_ORDER

GPIPE, ONE_F_ONE_B, INTERLEAVED, ZB_H1 = (
    SCHEDULE_ORDER.index(s) for s in ("gpipe", "1f1b", "interleaved", "zb-h1")
)


def test_gpipe_bubble_share_of_the_step_is_p_minus_1_over_m_plus_p_minus_1() -> None:
    # GPipe Section 2.3: p = 4, m = 8 gives 3/11 of the step.
    solution = GENERATORS["pipeline.bubble_fraction_of_step_percent"](
        {"schedule": GPIPE, "pp": 4, "microbatches": 8}
    )
    assert solution.answer == pytest.approx(100 * 3 / 11)


@pytest.mark.parametrize("schedule", [GPIPE, ONE_F_ONE_B])
def test_bubble_over_ideal_is_p_minus_1_over_m(schedule: int) -> None:
    # Narayanan et al. Section 2.2.1: (p - 1) / m = 3/8 for p = 4, m = 8.
    solution = GENERATORS["pipeline.bubble_over_ideal_percent"](
        {"schedule": schedule, "pp": 4, "microbatches": 8}
    )
    assert solution.answer == pytest.approx(37.5)


def test_interleaving_divides_the_bubble_by_v() -> None:
    # Section 2.2.2: (p - 1) / (v m) = 3 / 16 for p = 4, v = 2, m = 8.
    solution = GENERATORS["pipeline.bubble_over_ideal_percent"](
        {"schedule": INTERLEAVED, "pp": 4, "microbatches": 8, "virtual_stages": 2}
    )
    assert solution.answer == pytest.approx(100 * 3 / 16)


def test_zb_h1_bubble_is_a_third_of_1f1b_with_equal_f_b_w() -> None:
    # Qi et al.: (p - 1)(T_F + T_B - T_W) against (p - 1)(T_F + T_B + T_W).
    bubble = GENERATORS["pipeline.bubble_over_ideal_percent"]
    zb = bubble({"schedule": ZB_H1, "pp": 4, "microbatches": 8}).answer
    one_f_one_b = bubble({"schedule": ONE_F_ONE_B, "pp": 4, "microbatches": 8}).answer
    assert zb == pytest.approx(one_f_one_b / 3)


def test_step_time_is_m_plus_p_minus_1_slots() -> None:
    # GPipe: (m + p - 1)(t_f + t_b) = 11 * (10 + 20) ms for p = 4, m = 8.
    solution = GENERATORS["pipeline.step_time"](
        {"schedule": GPIPE, "pp": 4, "microbatches": 8, "t_f": 10, "t_b": 10, "t_w": 10}
    )
    assert solution.answer == pytest.approx(330)


@pytest.mark.parametrize(("schedule", "peak"), [(GPIPE, 16), (ONE_F_ONE_B, 4)])
def test_first_stage_holds_m_micro_batches_under_gpipe_and_p_under_1f1b(
    schedule: int, peak: int
) -> None:
    solution = GENERATORS["pipeline.peak_in_flight_first_stage"](
        {"schedule": schedule, "pp": 4, "microbatches": 16}
    )
    assert solution.answer == peak
