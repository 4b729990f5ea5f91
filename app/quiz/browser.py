"""The card browser (issue #29), as Anki's: every item of the bank with the learner's state of
it, searched and filtered; suspending an item and keeping a note on it (ItemMark)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlmodel import Session, select

from app.calc.messages import N_, Message
from app.quiz.bank import QuestionBank
from app.quiz.items import LEVEL_LABELS
from app.quiz.models import MAX_NOTE_CHARS, ItemMark, ItemState
from app.quiz.review_queue import states_of
from app.text_rules import has_control_characters

PAGE_SIZE = 50
PROMPT_CHARS = 120  # a row's prompt is cut here; the search reads the whole of it

# The states a row shows and the state filter takes, in Anki's words; labels are translated
# where the page shows them. fsrs.State numbers them 1 Learning, 2 Review, 3 Relearning.
STATES: dict[str, str] = {
    "new": N_("New"),
    "learning": N_("Learning"),
    "review": N_("Review"),
    "relearning": N_("Relearning"),
    "suspended": N_("Suspended"),
}
_FSRS_STATES = {1: "learning", 2: "review", 3: "relearning"}


class BadNote(ValueError):
    """A note that is too long or holds control characters."""


@dataclass(frozen=True)
class BrowserRow:
    item_id: str
    card_id: str
    card_title: str
    prompt: str  # plain text, cut at PROMPT_CHARS
    kind_label: str  # marked with N_(): the page translates it
    level_label: str  # likewise: junior, mid-level or senior
    state: str  # a key of STATES
    due: datetime | None  # None for an item never answered
    reviews: int
    lapses: int
    note: str


def plain_prompt(markdown: str) -> str:
    """A prompt as one line of plain text: a generated item's {inputs} as "…", and no
    Markdown or TeX marks."""
    text = re.sub(r"\{[A-Za-z_]\w*\}", "…", markdown)  # not TeX's 2^{30}
    text = re.sub(r"[`*_$\\]", "", text)
    return " ".join(text.split())


def shorten(text: str, limit: int = PROMPT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def state_name(state: ItemState | None, mark: ItemMark | None) -> str:
    if mark is not None and mark.suspended:
        return "suspended"
    if state is None:
        return "new"
    # A card stored before imports were checked may hold anything (app.admin repair-progress
    # mends it); the list names it "learning" rather than failing.
    code = state.fsrs_card.get("state", 1)
    return _FSRS_STATES.get(code if isinstance(code, int) else 1, "learning")


def marks_of(session: Session, user_id: int) -> dict[str, ItemMark]:
    statement = select(ItemMark).where(ItemMark.user_id == user_id)
    return {mark.item_id: mark for mark in session.exec(statement)}


def browser_rows(
    session: Session, user_id: int, bank: QuestionBank, card_ids: list[str],
    titles: dict[str, str], lang: str = "en", search: str = "", state: str = "",
) -> list[BrowserRow]:  # fmt: skip
    """The rows of the cards' items in study order, in `lang`, that hold `search` in their
    prompt or card title (case-insensitive) and are in `state` (a key of STATES; "" for any).
    `titles` maps card ids to their titles in `lang`."""
    states = {s.item_id: s for s in states_of(session, user_id)}
    marks = marks_of(session, user_id)
    needle = search.strip().casefold()
    rows = []
    for item in bank.for_cards(card_ids):
        shown = bank.in_language(item, lang)
        prompt, title = plain_prompt(shown.prompt), titles.get(item.card, item.card)
        if needle and needle not in prompt.casefold() and needle not in title.casefold():
            continue
        item_state, mark = states.get(item.id), marks.get(item.id)
        name = state_name(item_state, mark)
        if state and name != state:
            continue
        rows.append(
            BrowserRow(
                item_id=item.id, card_id=item.card, card_title=title,
                prompt=shorten(prompt), kind_label=item.kind_label,
                level_label=LEVEL_LABELS[bank.level_of(item)], state=name,
                due=item_state.due if item_state else None,
                reviews=item_state.reviews if item_state else 0,
                lapses=item_state.lapses if item_state else 0,
                note=mark.note if mark else "",
            )
        )  # fmt: skip
    return rows


def page_count(rows: int) -> int:
    """Pages of PAGE_SIZE rows; an empty list is one (empty) page."""
    return max(1, -(-rows // PAGE_SIZE))


def _mark(session: Session, user_id: int, item_id: str) -> ItemMark:
    return session.get(ItemMark, (user_id, item_id)) or ItemMark(user_id=user_id, item_id=item_id)


def set_suspended(session: Session, user_id: int, item_id: str, suspended: bool) -> ItemMark:
    mark = _mark(session, user_id, item_id)
    mark.suspended, mark.updated_at = suspended, datetime.now(UTC)
    session.add(mark)
    session.commit()
    session.refresh(mark)
    return mark


def clean_note(note: str) -> str:
    """The note as kept: trimmed; BadNote if too long or with control characters (a newline
    too: the note is one line in its row)."""
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise BadNote(Message(N_("a note is at most %(n)s characters"), n=MAX_NOTE_CHARS))
    if has_control_characters(note):
        raise BadNote(Message(N_("a note must not contain control or text-direction characters")))
    return note


def set_note(session: Session, user_id: int, item_id: str, note: str) -> ItemMark:
    mark = _mark(session, user_id, item_id)
    mark.note, mark.updated_at = clean_note(note), datetime.now(UTC)
    session.add(mark)
    session.commit()
    session.refresh(mark)
    return mark
