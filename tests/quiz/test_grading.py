"""Reading typed numbers (units, separators), tolerances, choices, and answer → FSRS rating."""

from __future__ import annotations

import pytest
from fsrs import Rating

from app.quiz.grading import AnswerError, grade_choice, parse_number, within_tolerance
from app.quiz.scheduling import FAST_S, SLOW_S, rating_for_answer


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [
        ("16.6", "GB", 16.6),
        ("1.5e9", "", 1.5e9),
        ("1,500", "", 1500.0),
        ("1_500.5", "", 1500.5),
        (" -3 ", "", -3.0),
        (".5", "", 0.5),
        ("16.6 GB", "GB", 16.6),
        ("16.6gb", "GB", 16.6),
        ("16640 MB", "GB", 16.64),
        ("1 TB", "GB", 1000.0),
        ("1 GiB", "GB", 1.073741824),
        ("250 ms", "s", 0.25),
        ("2 min", "s", 120.0),
    ],
)
def test_numbers_are_read_with_separators_exponents_and_units(
    text: str, unit: str, value: float
) -> None:
    assert parse_number(text, unit) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("text", ["", "sixteen", "nan", "inf", "-", "1e999", "GB"])
def test_what_is_not_a_finite_number_is_refused(text: str) -> None:
    with pytest.raises(AnswerError, match="number"):
        parse_number(text, "GB")


def test_a_unit_of_another_dimension_is_refused_with_the_unit_to_use() -> None:
    with pytest.raises(AnswerError, match="in GB"):
        parse_number("16 ms", "GB")


def test_relative_and_absolute_tolerances() -> None:
    assert within_tolerance(16.31, 16.640625, relative_tolerance=0.02)
    assert not within_tolerance(16.0, 16.640625, relative_tolerance=0.02)
    assert not within_tolerance(-16.64, 16.640625, relative_tolerance=0.02)
    assert within_tolerance(16.5, 16, absolute_tolerance=0.5)
    assert not within_tolerance(16.6, 16, absolute_tolerance=0.5)


def test_choices_are_all_or_nothing() -> None:
    flags = [True, True, False]
    assert grade_choice(flags, {0, 1}).correct
    assert not grade_choice(flags, {0}).correct
    assert not grade_choice(flags, {0, 1, 2}).correct


def test_answer_to_rating() -> None:
    fast, slow = FAST_S["generated"] - 1, SLOW_S["generated"] + 1
    middle = (FAST_S["generated"] + SLOW_S["generated"]) / 2
    assert rating_for_answer("generated", False, fast, False) == Rating.Again
    assert rating_for_answer("generated", True, fast, False) == Rating.Easy
    assert rating_for_answer("generated", True, middle, False) == Rating.Good
    assert rating_for_answer("generated", True, slow, False) == Rating.Hard
    assert rating_for_answer("generated", True, fast, True) == Rating.Hard
    assert rating_for_answer("single", True, None, False) == Rating.Good
