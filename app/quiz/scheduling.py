"""FSRS (py-fsrs 6.3.2): an answer becomes a rating, a rating moves the item's next due date.

The FSRS card of each user's item is stored as `fsrs.Card.to_dict()` in ItemState.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fsrs import Card, Rating, Scheduler

from app.quiz.stored_cards import repaired_card

# Fuzzing spreads due dates randomly; off, so the same answers always schedule the same way.
SCHEDULER = Scheduler(desired_retention=0.9, enable_fuzzing=False)

# Answer time that counts as fast (Easy) or slow (Hard), per kind. Reading a choice question
# is quicker than computing a number, so numeric kinds get more time.
FAST_S = {"single": 15.0, "multiple": 20.0, "numeric": 30.0, "generated": 45.0}
SLOW_S = {"single": 60.0, "multiple": 90.0, "numeric": 120.0, "generated": 240.0}


def rating_for_answer(kind: str, correct: bool, duration_s: float | None, hinted: bool) -> Rating:
    """Wrong → Again; right → Good, Hard when slow or after a hint, Easy when fast."""
    if not correct:
        return Rating.Again
    if hinted or (duration_s is not None and duration_s > SLOW_S[kind]):
        return Rating.Hard
    if duration_s is not None and duration_s <= FAST_S[kind]:
        return Rating.Easy
    return Rating.Good


def new_card(card_id: int, now: datetime | None = None) -> Card:
    # card_id given: fsrs otherwise derives one from the clock and sleeps 1 ms to keep it unique.
    return Card(card_id=card_id, due=now or datetime.now(UTC))


def review(card: Card, rating: Rating, now: datetime | None = None) -> Card:
    reviewed, _log = SCHEDULER.review_card(card, rating, review_datetime=now or datetime.now(UTC))
    return reviewed


def preview(card: Card, now: datetime) -> dict[Rating, datetime]:
    """The due date each rating would give `card` at `now`, as `review` gives it; nothing is
    kept (the scheduler reviews a copy). What a rating button shows before it is pressed."""
    return {rating: review(card, rating, now).due for rating in Rating}


def recall_probability(card_dict: dict[str, Any], now: datetime | None = None) -> float:
    """FSRS retrievability: the predicted chance of recalling the item now (0 if never seen)."""
    now = now or datetime.now(UTC)
    # Read as repaired, so one broken stored card cannot fail every page that shows progress
    # (issue #25, finding 7); the card id plays no part in recall.
    card = repaired_card(card_dict, card_id=0, now=now).card
    return SCHEDULER.get_card_retrievability(card, now)


def recall_changes_after(card_dict: dict[str, Any], at: datetime) -> datetime | None:
    """When recall_probability of the card next differs from its value `at`: py-fsrs counts
    whole days since the last review, so the probability moves in steps, one a day; None for a
    card never reviewed (0 until it is), or one whose next step is past the calendar's end."""
    card = repaired_card(card_dict, card_id=0, now=at).card
    if card.last_review is None or card.stability is None:
        return None
    whole_days = max(0, (at - card.last_review).days)
    try:
        return card.last_review + timedelta(days=whole_days + 1)
    except OverflowError:  # a review stamped at the calendar's end (an imported file's)
        return None
