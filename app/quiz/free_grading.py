"""Scoring a free response: the checks that need no judgement, the rubric the learner ticks,
and the FSRS rating the score gives.

The automatic checks read the answer as written. A figure counts when any number in the answer,
in a unit of the check's kind (or with no unit), is within the check's tolerance of what the
calculator computes; a key term counts when one of its " | " alternatives appears, whatever
the case. Each check that passes weighs 1, beside the rubric's weights: a learner who says
the right figure gets credit without ticking it, and one who does not cannot tick it in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from fsrs import Rating

from app.quiz.generators import GENERATORS
from app.quiz.grading import AnswerError, unit_factor, within_tolerance
from app.quiz.items import FreeResponseItem, NumberCheck

# The longest answer kept: about ten minutes of speech.
MAX_RESPONSE_CHARS = 6000
# A score at or above PASS_SCORE counts as answered right (the journey, the mock's report).
PASS_SCORE = 0.6
# Score bands for the rating: below PASS Again, then Hard, Good, Easy.
GOOD_SCORE = 0.75
EASY_SCORE = 0.9
# Over the item's time limit by more than this, the rating is at most Hard.
OVERTIME_GRACE = 1.1

# A number as people write it (1,120  17.5  1.5e9  4k), then an optional unit.
_STATED = re.compile(
    r"(?<![\w.])(\d+(?:,\d{3})+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*"
    r"(GiB|MiB|KiB|TiB|PiB|GB/s|TB/s|MB/s|[KMGTP]?FLOP/s|[KMGTP]?FLOP|PB|TB|GB|MB|KB|"
    r"days?|min|ms|µs|us|ns|h|s|%|B)?(?![\w/])"
)


@dataclass(frozen=True)
class FigureCheck:
    label: str
    expected: float
    unit: str
    stated: float | None  # the answer's number that matched, in `unit`; None when none did
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.stated is not None


@dataclass(frozen=True)
class TermCheck:
    term: str  # as the item writes it, alternatives and all
    passed: bool


@dataclass(frozen=True)
class AutoChecks:
    figures: tuple[FigureCheck, ...]
    terms: tuple[TermCheck, ...]

    @property
    def passed(self) -> int:
        return sum(c.passed for c in (*self.figures, *self.terms))

    @property
    def count(self) -> int:
        return len(self.figures) + len(self.terms)


@lru_cache(maxsize=2048)
def _computed(generator: str, inputs: tuple[tuple[str, float | int], ...]) -> float:
    return GENERATORS[generator](dict(inputs)).answer


def expected_value(check: NumberCheck) -> float:
    """What the calculator says, in the check's unit."""
    return _computed(check.generator, tuple(sorted(check.inputs.items())))


def stated_numbers(text: str) -> list[tuple[float, str]]:
    """Every number the text writes, with the unit written right after it ('' if none)."""
    found = []
    for match in _STATED.finditer(text):
        try:
            found.append((float(match.group(1).replace(",", "")), match.group(2) or ""))
        except ValueError:
            continue
    return found


def _in_unit(value: float, written: str, unit: str) -> float | None:
    try:
        return value * unit_factor(written, unit)
    except AnswerError:
        return None  # a unit of another kind: 17.5 GB is not a time


def check_figure(check: NumberCheck, text: str) -> FigureCheck:
    expected = expected_value(check)
    stated = None
    for value, written in stated_numbers(text):
        converted = _in_unit(value, written, check.unit)
        if converted is not None and within_tolerance(converted, expected,
                                                      check.relative_tolerance):  # fmt: skip
            stated = converted
            break
    return FigureCheck(check.label, expected, check.unit, stated, check.relative_tolerance)


def term_present(term: str, text: str) -> bool:
    folded = text.casefold()
    return any(alt.strip().casefold() in folded for alt in term.split("|") if alt.strip())


def auto_checks(item: FreeResponseItem, text: str) -> AutoChecks:
    figures = tuple(check_figure(check, text) for check in item.numbers)
    terms = tuple(TermCheck(term, term_present(term, text)) for term in item.key_terms)
    return AutoChecks(figures, terms)


def rubric_score(item: FreeResponseItem, ticked: set[int], checks: AutoChecks) -> float:
    """Ticked weights and passed checks over all weights and checks, 0 to 1."""
    got = sum(p.weight for i, p in enumerate(item.rubric) if i in ticked) + checks.passed
    return got / (item.total_weight + checks.count)


def rating_for_score(score: float, duration_s: float | None, minutes: int) -> Rating:
    """Below PASS_SCORE Again; then Hard, Good and Easy by score; over time at most Hard."""
    if score < PASS_SCORE:
        return Rating.Again
    if duration_s is not None and duration_s > minutes * 60 * OVERTIME_GRACE:
        return Rating.Hard
    if score < GOOD_SCORE:
        return Rating.Hard
    return Rating.Good if score < EASY_SCORE else Rating.Easy
