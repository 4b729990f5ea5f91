"""A stored FSRS card (`fsrs.Card.to_dict()`, py-fsrs 6.3.2) as the scheduler and the pages can
compute with it. One set of rules serves three readers: the progress import refuses a card
that breaks them, the pages and answering read such a card as repaired, and
`python -m app.admin repair-progress` writes the repaired card back.

Issue #25, finding 7: an imported card with a naive last_review, a negative stability or a
fractional step made its learner's /, /progress and answering fail for good.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fsrs import Card, State


def card_id_for(user_id: int, item_id: str) -> int:
    # Fixed per user and item: fsrs would otherwise derive one from the clock and sleep 1 ms to
    # keep it unique.
    return zlib.crc32(f"{user_id}:{item_id}".encode())


def _parsed(value: Any) -> Card:
    try:
        return Card.from_dict(value)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"not an FSRS card ({exc.__class__.__name__}: {exc})") from exc


def _whole(step: object) -> bool:
    return isinstance(step, int) and not isinstance(step, bool) and step >= 0


def _off_the_calendar(moment: datetime) -> bool:
    """Whether an aware time has no UTC time to be stored as: one of year 1 or 9999 whose
    offset takes it past the calendar (issue #25)."""
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return True
    return False


def card_problems(card: Card) -> dict[str, str]:
    """What FSRS cannot compute with in `card`, by the field at fault; empty for a sound card.

    The bounds are those of what FSRS itself writes. A card still learning may lack stability
    and difficulty (it has them from its first answer on); the scheduler asserts that a card in
    review or relearning has both, and that a relearning card has a step.
    """
    problems = {}
    if card.due.tzinfo is None:
        problems["due"] = "the FSRS card's due date needs a time zone"
    elif _off_the_calendar(card.due):
        problems["due"] = "the FSRS card's due date is off the calendar once in UTC"
    if card.last_review is not None and card.last_review.tzinfo is None:
        problems["last_review"] = "the FSRS card's last_review needs a time zone"
    elif card.last_review is not None and _off_the_calendar(card.last_review):
        problems["last_review"] = "the FSRS card's last_review is off the calendar once in UTC"
    # None passes only where FSRS itself leaves the field empty.
    learning = card.state == State.Learning
    stability, difficulty = card.stability, card.difficulty
    if not (learning if stability is None else math.isfinite(stability) and stability > 0):
        problems["stability"] = "the FSRS card's stability must be a positive number"
    if not (learning if difficulty is None else 1 <= difficulty <= 10):
        problems["difficulty"] = "the FSRS card's difficulty must be between 1 and 10"
    if not (card.state == State.Review if card.step is None else _whole(card.step)):
        problems["step"] = "the FSRS card's step must be a whole number, 0 or more (null in review)"
    return problems


def checked_card(value: Any) -> Card:
    """The card `value` holds, or ValueError saying (to the importer) what is wrong with it."""
    card = _parsed(value)
    problems = card_problems(card)
    if problems:
        raise ValueError(next(iter(problems.values())))
    return card


@dataclass(frozen=True)
class RepairedCard:
    card: Card  # one checked_card takes
    fixes: list[str]  # each problem and what was done about it; empty: the card was sound


def repaired_card(value: Any, card_id: int, now: datetime) -> RepairedCard:
    """The card `value` holds, made one FSRS can compute with.

    A time without a zone is read as UTC, which is what the app has always written. A step
    that is not one goes back to the first of its (re)learning steps, or to none in review.
    A stability or difficulty outside what FSRS writes cannot be clamped into meaning: the
    two are FSRS's estimate of this learner's memory of this item, each updated from the
    other at every answer, so a forged one leaves neither worth keeping, and a clamped
    stability would schedule by a guess (0.001 days: asked again at once; a huge one: never).
    Such a card, and anything that is not an FSRS card at all, becomes a new card due `now`,
    as every item starts: the next answer sets both numbers from its rating. The learner's
    answers are other rows and stay.
    """
    new = "replaced by a new card, due now"
    try:
        card = _parsed(value)
    except ValueError as exc:
        return RepairedCard(Card(card_id=card_id, due=now), [f"{exc}: {new}"])
    problems = card_problems(card)
    if "stability" in problems or "difficulty" in problems:
        fixes = [f"{problems[f]}, not {getattr(card, f)!r}: {new}"
                 for f in ("stability", "difficulty") if f in problems]  # fmt: skip
        return RepairedCard(Card(card_id=card_id, due=now), fixes)
    fixes = []
    for field in ("due", "last_review"):
        if field in problems:
            setattr(card, field, getattr(card, field).replace(tzinfo=UTC))
            fixes.append(f"{problems[field]}: read as UTC")
    if "step" in problems:
        was, card.step = card.step, None if card.state == State.Review else 0
        fixes.append(f"{problems['step']}, not {was!r}: set to {card.step!r}")
    return RepairedCard(card, fixes)
