"""`python -m app.admin repair-progress`: mends the FSRS cards stored before the progress import
checked them (issue #25, finding 7: a crafted import made its learner's /, /progress and
answering fail for good).

A card the import would now refuse (app.quiz.stored_cards.checked_card) is rewritten as
repaired_card reads it, wherever one is kept: an item's schedule (ItemState) and the state an
answer keeps so it can be undone (QuizAttempt.previous_state), which undo would put back. The
pages already read such a card as repaired; this makes the repair last, and lets the import's
merge compare it. The import checked the rest of a schedule (item id, counts) from the start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from app.accounts.models import User
from app.quiz.models import ItemState, QuizAttempt
from app.quiz.stored_cards import card_id_for, repaired_card


@dataclass(frozen=True)
class MendedCard:
    user_id: int
    item_id: str
    attempt_id: int | None  # the answer whose undo state held the card; None: the schedule
    fixes: list[str]  # each problem and what was done about it


def repair_progress(
    session: Session, dry_run: bool = False, now: datetime | None = None
) -> list[MendedCard]:
    """Every stored card the import would refuse, by user, item and row; mended and committed
    in one transaction unless `dry_run`. A card that becomes a new one is due `now`."""
    now = now or datetime.now(UTC)
    mended = []
    states = select(ItemState).order_by(col(ItemState.user_id), col(ItemState.item_id))
    for state in session.exec(states):
        repaired = repaired_card(state.fsrs_card, card_id_for(state.user_id, state.item_id), now)
        if not repaired.fixes:
            continue
        mended.append(MendedCard(state.user_id, state.item_id, None, repaired.fixes))
        if not dry_run:
            # updated_at stays: this corrects what was stored rather than scheduling anew, and
            # the undo state of the latest answer is mended below, so undo may still put it back.
            state.fsrs_card, state.due = repaired.card.to_dict(), repaired.card.due
            session.add(state)
    attempts = (
        select(QuizAttempt)
        .where(col(QuizAttempt.previous_state).is_not(None))
        .order_by(col(QuizAttempt.user_id), col(QuizAttempt.item_id), col(QuizAttempt.id))
    )
    for attempt in session.exec(attempts):
        previous = attempt.previous_state or {}
        card_id = card_id_for(attempt.user_id, attempt.item_id)
        repaired = repaired_card(previous.get("fsrs_card"), card_id, now)
        if not repaired.fixes:
            continue
        mended.append(MendedCard(attempt.user_id, attempt.item_id, attempt.id, repaired.fixes))
        if not dry_run:
            # A new dict, not the old one changed: SQLAlchemy writes a JSON column it sees
            # replaced.
            attempt.previous_state = {**previous, "fsrs_card": repaired.card.to_dict(),
                                      "due": repaired.card.due.isoformat()}  # fmt: skip
            session.add(attempt)
    session.commit()
    mended.sort(key=lambda m: m.user_id)  # stable: items and rows keep their order
    return mended


def report(session: Session, mended: list[MendedCard], dry_run: bool) -> list[str]:
    """What repair_progress found and did, as lines for the operator: each user, then each
    card with its problems."""
    if not mended:
        return ["every stored FSRS card is sound: nothing to repair"]
    names = {u.id: u.username for u in session.exec(select(User))}
    lines = []
    user_id = None
    for card in mended:
        if card.user_id != user_id:
            user_id = card.user_id
            count = sum(m.user_id == user_id for m in mended)
            lines.append(f"{names.get(user_id, '?')} (id {user_id}): {count} card(s)")
        where = "schedule" if card.attempt_id is None else f"undo state of answer {card.attempt_id}"
        lines.extend(f"  {card.item_id} ({where}): {fix}" for fix in card.fixes)
    users = len({m.user_id for m in mended})
    if dry_run:
        lines.append(f"dry run: {len(mended)} card(s) of {users} user(s) would be repaired; "
                     "nothing changed")  # fmt: skip
    else:
        lines.append(f"repaired {len(mended)} card(s) of {users} user(s)")
    return lines
