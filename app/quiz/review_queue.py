"""What to ask next: items that are due first (most overdue first), then new items in the
cards' study order (prerequisites first); a topic narrows both to a card or a tag.

A daily review brings in at most NEW_PER_DAY new items, as Anki does: new material is
learned a little at a time, and a day's review has an end (the study plan, app/journey,
schedules the path's new cards; practice on a topic has no cap)."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Literal

from sqlalchemy import func
from sqlmodel import Session, col, select

from app.calc.messages import N_, Message
from app.cards.service import CardLibrary
from app.quiz.bank import QuestionBank, QuizItem
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.scheduling import recall_probability

Mode = Literal["review", "practice"]
NEW_PER_DAY = 20


def new_left_today(session: Session, user_id: int, now: datetime) -> int:
    """How many new items today's review may still bring in: NEW_PER_DAY less the items first
    answered today (UTC), in any mode."""
    start = datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)
    first_answers = (
        select(QuizAttempt.item_id)
        .where(QuizAttempt.user_id == user_id)
        .group_by(QuizAttempt.item_id)
        .having(func.min(QuizAttempt.created_at) >= start)
    )
    return max(0, NEW_PER_DAY - len(session.exec(first_answers).all()))


class UnknownTopic(ValueError):
    """A topic that is neither a card id nor a tag."""


def topic_cards(cards: CardLibrary, topic: str) -> list[str]:
    """Card ids in study order: every card, one card (by id), or the cards with a tag."""
    ordered = cards.all()
    if not topic:
        return [c.meta.id for c in ordered]
    if topic in cards:
        return [topic]
    tagged = [c.meta.id for c in ordered if topic in c.meta.tags]
    if not tagged:
        raise UnknownTopic(Message(N_("no card or tag called '%(topic)s'"), topic=topic))
    return tagged


def topics(cards: CardLibrary, bank: QuestionBank, lang: str = "en") -> list[tuple[str, str]]:
    """(value, label) for the topic filter: tags, then cards that have items, in study order,
    each under its title in `lang` (its edition there, else English)."""
    with_items = {item.card for item in bank.all()}
    options = [(tag, f"#{tag}") for tag in cards.tags()]
    options += [(c.meta.id, c.meta.title) for c in cards.in_language(lang)
                if c.meta.id in with_items]  # fmt: skip
    return options


def states_of(session: Session, user_id: int) -> list[ItemState]:
    """Every item state of the user: what the queue, the progress pages and plans read."""
    return list(session.exec(select(ItemState).where(ItemState.user_id == user_id)))


def next_item(
    session: Session,
    user_id: int,
    bank: QuestionBank,
    card_ids: list[str],
    mode: Mode = "review",
    skip: str = "",
    now: datetime | None = None,
    new_left: int | None = None,
    states_read: list[ItemState] | None = None,
) -> tuple[QuizItem, str] | None:
    """The next item and why it was chosen ('due', 'new', 'practice'), or None when a review
    has nothing due and nothing new. Practice never runs out: it falls back to the item with
    the lowest recall probability. `skip` (the item just answered) is served again only when
    it is the only one left. `new_left` is new_left_today's count where the caller has it
    already (a review page's progress bar needs it too), and `states_read` the user's item
    states, likewise."""
    now = now or datetime.now(UTC)
    items = bank.for_cards(card_ids)
    in_topic = {item.id for item in items}
    if states_read is None:
        states_read = states_of(session, user_id)
    states = {s.item_id: s for s in states_read if s.item_id in in_topic}
    due = sorted((s for s in states.values() if s.due <= now), key=lambda s: (s.due, s.item_id))
    due_ids = [s.item_id for s in due]
    new_ids = [item.id for item in items if item.id not in states]
    if mode == "review":
        if new_left is None:
            new_left = new_left_today(session, user_id, now)
        new_ids = new_ids[:new_left]
    candidates = [(i, "due") for i in due_ids] + [(i, "new") for i in new_ids]
    if mode == "practice":
        by_recall = sorted(
            (s for s in states.values() if s.item_id not in due_ids),
            key=lambda s: (recall_probability(s.fsrs_card, now), s.due),
        )
        candidates += [(s.item_id, "practice") for s in by_recall]
    for item_id, reason in candidates:
        if item_id != skip:
            return bank.get(item_id), reason  # type: ignore[return-value]
    if candidates:
        item_id, reason = candidates[0]
        return bank.get(item_id), reason  # type: ignore[return-value]
    return None


def due_count(session: Session, user_id: int, item_ids: set[str], now: datetime) -> int:
    statement = select(ItemState.item_id).where(
        ItemState.user_id == user_id, col(ItemState.due) <= now
    )
    return sum(1 for item_id in session.exec(statement) if item_id in item_ids)
