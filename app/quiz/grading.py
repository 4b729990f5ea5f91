"""Reading a typed number (with an optional unit) and grading it; grading a choice."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from app.calc.messages import N_, Message

# Units an answer may be typed in, per dimension, as a factor to that dimension's base unit.
# Bytes are decimal (GB = 10^9) unless the binary prefix is written (GiB = 2^30).
_UNIT_FAMILIES: list[dict[str, float]] = [
    {
        "B": 1,
        "KB": 1e3,
        "MB": 1e6,
        "GB": 1e9,
        "TB": 1e12,
        "PB": 1e15,
        "KiB": 2**10,
        "MiB": 2**20,
        "GiB": 2**30,
        "TiB": 2**40,
        "PiB": 2**50,
    },  # fmt: skip
    {
        "ns": 1e-9,
        "us": 1e-6,
        "µs": 1e-6,
        "ms": 1e-3,
        "s": 1,
        "min": 60,
        "h": 3600,
        "days": 86400,
        "day": 86400,
    },  # fmt: skip
    {"FLOP": 1, "GFLOP": 1e9, "TFLOP": 1e12, "PFLOP": 1e15},
    {"FLOP/s": 1, "GFLOP/s": 1e9, "TFLOP/s": 1e12, "PFLOP/s": 1e15},
    {"GB/s": 1, "TB/s": 1e3, "MB/s": 1e-3},
    {"%": 1},
]
_NUMBER = re.compile(r"^\s*([+-]?(?:\d[\d,_ ]*\d|\d)?(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*(.*?)\s*$")


class AnswerError(ValueError):
    """A typed answer that is not a number in a unit this question takes; says what to type."""


def unit_factor(typed_unit: str, item_unit: str) -> float:
    """The factor that turns a value in `typed_unit` into one in `item_unit`."""
    if typed_unit == "" or typed_unit.lower() == item_unit.lower():
        return 1.0
    for family in _UNIT_FAMILIES:
        if typed_unit in family and item_unit in family:
            return family[typed_unit] / family[item_unit]
    raise AnswerError(
        Message(N_("type the answer in %(unit)s (or a number alone)"), unit=Message(item_unit))
    )


def parse_number(text: str, unit: str = "") -> float:
    """'1.5e9', '1,500', '16.6 GB', '16640 MB' (for a GB question): the value in `unit`."""
    match = _NUMBER.match(text)
    digits = match.group(1).replace(",", "").replace("_", "").replace(" ", "") if match else ""
    if not digits or digits in {"+", "-", "."}:
        if unit:
            example = N_("type a number, e.g. 16.6 or 1.5e9 (in %(unit)s)")
            raise AnswerError(Message(example, unit=Message(unit)))
        raise AnswerError(Message(N_("type a number, e.g. 16.6 or 1.5e9")))
    try:
        value = float(digits)
    except ValueError as exc:
        raise AnswerError(Message(N_("type a number, e.g. 16.6 or 1.5e9"))) from exc
    if not math.isfinite(value):
        raise AnswerError(Message(N_("type a finite number")))
    return value * unit_factor(match.group(2), unit) if unit else value


def within_tolerance(
    answer: float,
    expected: float,
    relative_tolerance: float | None = None,
    absolute_tolerance: float | None = None,
) -> bool:
    if absolute_tolerance is not None:
        return abs(answer - expected) <= absolute_tolerance
    return math.isclose(answer, expected, rel_tol=relative_tolerance or 0.0, abs_tol=0.0)


@dataclass(frozen=True)
class ChoiceGrade:
    correct: bool  # all-or-nothing: exactly the correct options picked
    picked: frozenset[int]
    right: frozenset[int]


def grade_choice(correct_flags: list[bool], picked: set[int]) -> ChoiceGrade:
    right = frozenset(i for i, flag in enumerate(correct_flags) if flag)
    return ChoiceGrade(correct=frozenset(picked) == right, picked=frozenset(picked), right=right)
