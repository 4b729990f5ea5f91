"""What to ask next: items that are due first (most overdue first), then new items in the
cards' study order (prerequisites first); a topic narrows both to a card or a tag.

A daily review brings in at most the learner's new items a day (NEW_PER_DAY unless they set
another number on /progress), as Anki does: new material is learned a little at a time, and a
day's review has an end (the study plan, app/journey, schedules the path's new cards; practice
on a topic has no cap).

An item answered wrong goes back to FSRS's (re)learning steps, due again in 1 or 10 minutes.
It comes back among the due items once that time has passed; if the review runs out first,
it is asked before the review ends, up to LEARN_AHEAD early, as Anki's "learn ahead limit"
does, so that a wrong answer is always answered again in the same sitting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from functools import lru_cache
from typing import Any, Literal, NamedTuple, TypeVar

from sqlalchemy import bindparam, func
from sqlmodel import Session, col, select

from app.calc.messages import N_, Message
from app.cards.service import CardLibrary
from app.quiz.bank import QuestionBank
from app.quiz.items import QuizItem
from app.quiz.models import ItemMark, ItemState, QuizAttempt, ReviewSettings
from app.quiz.scheduling import recall_probability

Mode = Literal["review", "practice"]
NEW_PER_DAY = 20
LEARN_AHEAD = timedelta(minutes=20)  # Anki's default learn ahead limit

# The review's reads are built once, here, and given their values when run: every question
# page and answer runs five of them, and building a statement anew (its clauses, then its
# cache key) cost more than twice what running it did (docs/benchmarks.md, "The review's
# statements built once").
_FIRST_ANSWERED = (
    select(QuizAttempt.item_id)
    .where(QuizAttempt.user_id == bindparam("user_id"))
    .group_by(QuizAttempt.item_id)
    .having(func.min(QuizAttempt.created_at) >= bindparam("start"))
    .subquery()
)
_NEW_PER_DAY_AND_FIRST_ANSWERED = select(
    func.coalesce(
        select(ReviewSettings.new_per_day)
        .where(ReviewSettings.user_id == bindparam("user_id"))
        .scalar_subquery(),
        NEW_PER_DAY,
    ),
    select(func.count()).select_from(_FIRST_ANSWERED).scalar_subquery(),
)
_SUSPENDED = select(ItemMark.item_id).where(
    ItemMark.user_id == bindparam("user_id"), col(ItemMark.suspended).is_(True)
)
_SCHEDULE = select(ItemState.item_id, ItemState.due).where(
    ItemState.user_id == bindparam("user_id")
)
_SCHEDULE_WITH_CARDS = _SCHEDULE.add_columns(ItemState.fsrs_card)
# The answers to the items due back within a window, oldest first. The window rather than a
# list of item ids: one statement whatever the number of items (an IN list of n ids is a
# statement of its own for each n, compiled and prepared anew).
_ANSWERS_DUE_BACK = (
    select(QuizAttempt.item_id, QuizAttempt.correct)
    .join(
        ItemState,
        (col(ItemState.user_id) == col(QuizAttempt.user_id))
        & (col(ItemState.item_id) == col(QuizAttempt.item_id)),
    )
    .where(
        QuizAttempt.user_id == bindparam("user_id"),
        col(ItemState.due) > bindparam("after"),
        col(ItemState.due) <= bindparam("until"),
    )
    .order_by(col(QuizAttempt.created_at), col(QuizAttempt.id))
)


def new_per_day_of(session: Session, user_id: int) -> int:
    """The most new items the user's daily review brings in a day: their setting, or
    NEW_PER_DAY."""
    settings = session.get(ReviewSettings, user_id)
    return NEW_PER_DAY if settings is None else settings.new_per_day


def set_new_per_day(session: Session, user_id: int, new_per_day: int) -> None:
    settings = session.get(ReviewSettings, user_id) or ReviewSettings(
        user_id=user_id, new_per_day=new_per_day
    )
    settings.new_per_day = new_per_day
    settings.updated_at = datetime.now(UTC)
    session.add(settings)
    session.commit()


def new_left_today(session: Session, user_id: int, now: datetime) -> int:
    """How many new items today's review may still bring in: the user's new_per_day_of less
    the items first answered today (UTC), in any mode. One statement: every review page and
    answer asks."""
    start = datetime.combine(now.astimezone(UTC).date(), time(), tzinfo=UTC)
    per_day, first_today = session.exec(
        _NEW_PER_DAY_AND_FIRST_ANSWERED, params={"user_id": user_id, "start": start}
    ).one()
    return max(0, per_day - first_today)


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


@dataclass(frozen=True)
class TopicOptions:
    """The topic filter's choices, each (value, label): the cards that have questions, in
    study order under their titles in the learner's language, then the tags of those cards."""

    cards: tuple[tuple[str, str], ...]
    tags: tuple[tuple[str, str], ...]

    def label_of(self, value: str) -> str | None:
        return next((label for v, label in self.cards + self.tags if v == value), None)


# Content is loaded once per app (app/main.py), so the choices are made once per language;
# every question page shows them.
@lru_cache(maxsize=8)
def topics(cards: CardLibrary, bank: QuestionBank, lang: str = "en") -> TopicOptions:
    """The topic filter's choices; card titles in `lang` (the card's edition there, else
    English). A tag none of whose cards has a question is left out: it would ask nothing."""
    with_items = {item.card for item in bank.all()}
    tags = sorted({t for c in cards.all() if c.meta.id in with_items for t in c.meta.tags})
    return TopicOptions(
        cards=tuple((c.meta.id, c.meta.title) for c in cards.in_language(lang)
                    if c.meta.id in with_items),
        tags=tuple((tag, f"#{tag}") for tag in tags),
    )  # fmt: skip


def suspended_ids(session: Session, user_id: int) -> set[str]:
    """The items the user suspended in the card browser (app/quiz/browser.py)."""
    return set(session.exec(_SUSPENDED, params={"user_id": user_id}))


def askable_items(
    session: Session, user_id: int, bank: QuestionBank, card_ids: list[str],
    suspended: set[str] | None = None,
) -> list[QuizItem]:  # fmt: skip
    """The cards' items in study order, less the ones the user suspended: what the daily
    review and practice may ask, and what the review's counts count. `suspended` is
    suspended_ids where the caller has read it already (a review page counts as well)."""
    if suspended is None:
        suspended = suspended_ids(session, user_id)
    return [item for item in bank.for_cards(card_ids) if item.id not in suspended]


def states_of(session: Session, user_id: int) -> list[ItemState]:
    """Every item state of the user, FSRS card and all: what the progress pages and plans
    read (the queue reads schedule_of)."""
    return list(session.exec(select(ItemState).where(ItemState.user_id == user_id)))


class Scheduled(NamedTuple):
    """When one of the user's items is due: the two columns of its ItemState the queue and
    the review's counts read, and its FSRS card where practice asked for it (recall order)."""

    item_id: str
    due: datetime
    fsrs_card: dict[str, Any] | None = None


def schedule_of(session: Session, user_id: int, with_cards: bool = False) -> list[Scheduled]:
    """When each item the user has answered is due. The FSRS cards only `with_cards`:
    decoding a card's JSON costs several times more than the rest of its row, a review page
    reads every item the learner has ever answered, and only practice orders by recall."""
    statement = _SCHEDULE_WITH_CARDS if with_cards else _SCHEDULE
    return [Scheduled(*row) for row in session.exec(statement, params={"user_id": user_id})]


_S = TypeVar("_S", Scheduled, ItemState)


def coming_back(session: Session, user_id: int, states: Iterable[_S], now: datetime) -> list[_S]:
    """Items whose latest answer was wrong and which FSRS brings back within LEARN_AHEAD, not
    due yet, soonest first: what a review asks again before it ends. (A wrong answer is rated
    Again, which always puts the item in a (re)learning step of 1 or 10 minutes.)"""
    soon = {s.item_id: s for s in states if now < s.due <= now + LEARN_AHEAD}
    if not soon:
        return []
    window = {"user_id": user_id, "after": now, "until": now + LEARN_AHEAD}
    answers = session.exec(_ANSWERS_DUE_BACK, params=window)
    # Later answers overwrite earlier ones; an item outside `states` (another topic) is not
    # asked about.
    latest_right = {item_id: right for item_id, right in answers if item_id in soon}
    wrong = [s for item_id, s in soon.items() if latest_right.get(item_id) is False]
    return sorted(wrong, key=lambda s: (s.due, s.item_id))


def next_item(
    session: Session,
    user_id: int,
    bank: QuestionBank,
    card_ids: list[str],
    mode: Mode = "review",
    skip: str = "",
    now: datetime | None = None,
    new_left: int | None = None,
    states_read: Sequence[Scheduled] | None = None,
    suspended: set[str] | None = None,
) -> tuple[QuizItem, str] | None:
    """The next item and why it was chosen ('due', 'new', 'again', 'practice'), or None when a
    review has nothing due, nothing new and nothing coming_back: a review asks an item coming
    back ('again') once nothing else is left. Practice never runs out: it falls back to the
    item with the lowest recall probability. `skip` (the item just answered) is served again
    only when it is the only one left. `new_left` is new_left_today's count where the caller
    has it already (a review page's progress bar needs it too), and `states_read` the user's
    schedule_of (with_cards, for practice) and `suspended` their suspended items, likewise."""
    now = now or datetime.now(UTC)
    items = askable_items(session, user_id, bank, card_ids, suspended)
    in_topic = {item.id for item in items}
    if states_read is None:
        states_read = schedule_of(session, user_id, with_cards=mode == "practice")
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
            key=lambda s: (recall_probability(_read_card(s), now), s.due),
        )
        candidates += [(s.item_id, "practice") for s in by_recall]
    elif all(item_id == skip for item_id, _ in candidates):
        back = coming_back(session, user_id, states.values(), now)
        candidates += [(s.item_id, "again") for s in back]
    for item_id, reason in candidates:
        if item_id != skip:
            return bank.get(item_id), reason  # type: ignore[return-value]
    if candidates:
        item_id, reason = candidates[0]
        return bank.get(item_id), reason  # type: ignore[return-value]
    return None


def _read_card(state: Scheduled) -> dict[str, Any]:
    if state.fsrs_card is None:
        raise ValueError("practice orders by recall: read its schedule_of with_cards=True")
    return state.fsrs_card


def due_count(session: Session, user_id: int, item_ids: set[str], now: datetime) -> int:
    statement = select(ItemState.item_id).where(
        ItemState.user_id == user_id, col(ItemState.due) <= now
    )
    return sum(1 for item_id in session.exec(statement) if item_id in item_ids)
