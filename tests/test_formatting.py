"""How numbers read on the pages and in KaTeX."""

from __future__ import annotations

from fractions import Fraction

import pytest

from app.formatting import input_value, latex_fraction, latex_int, latex_number, mastery_percent


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0"),
        (0.125, "0.125"),
        (3.14159, "3.142"),
        (16384, "16380"),  # four significant digits, never 1.638e+04
        (50000, "50000"),  # never 5e+04
        (7.5e9, r"7.5 \times 10^{9}"),
        (2.5e-4, r"2.5 \times 10^{-4}"),
        (float("inf"), r"\infty"),
    ],
)
def test_latex_number(value: float, expected: str) -> None:
    assert latex_number(value) == expected


def test_latex_int_separates_thousands_for_katex() -> None:
    assert latex_int(65536) == "65{,}536"
    assert latex_int(999) == "999"


def test_latex_fraction_is_exact_and_drops_a_unit_denominator() -> None:
    assert latex_fraction(Fraction(3, 2)) == r"\frac{3}{2}"
    assert latex_fraction(Fraction(3, 2), r"\tfrac") == r"\tfrac{3}{2}"
    assert latex_fraction(Fraction(4, 2)) == "2"


def test_a_form_field_shows_a_number_as_typed() -> None:
    # issue #29: the compute calculator's Tokens field read "300000000000.0"
    assert input_value(300e9) == "300000000000"
    assert input_value(4194304.0) == "4194304"
    assert input_value(0.85) == "0.85"
    assert input_value(1e300) == "1e+300"  # beyond exact integers: left as Python says it
    assert input_value(None) == "" and input_value(8) == "8" and input_value("x") == "x"


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [(None, "–"), (0.0, "0%"), (0.624, "62%"), (0.626, "63%"), (1.0, "100%")],
)
def test_mastery_percent_rounds_and_says_when_nothing_was_answered(
    fraction: float | None, expected: str
) -> None:
    assert mastery_percent(fraction) == expected
