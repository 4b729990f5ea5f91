"""The "Check yourself" boxes inside a card (issue #29): which of the card's quiz items is asked
after which section. Pure functions of the card and its items: a card page is the same on
every visit (and so can be cached), and the server can work out again what a box asked.
"""

from __future__ import annotations

import html
import random
import re
import zlib
from dataclasses import dataclass

from app.cards.models import CLOSING_SECTIONS, FIRST_SECTION, Card
from app.cards.service import SECTION_START
from app.quiz.bank import QuestionBank
from app.quiz.items import GRADED_KINDS, QuizItem
from app.quiz.service import Question, draw_question

# A check per main section, up to this many: a card is read, not drilled (the quiz is for that).
MAX_CHECKS = 4
# Sections with no check after them: the summary comes before anything to check; the closing
# ones are lists (mistakes, questions, sources) rather than something taught.
UNCHECKED_SECTIONS = frozenset({FIRST_SECTION, *CLOSING_SECTIONS})
_HEADING_ID = re.compile(r'\s*<h2 id="([^"]+)"')


@dataclass(frozen=True)
class SectionCheck:
    """The box after one section: `position` is the section's among the card's h2s."""

    position: int
    heading_id: str  # the section heading's anchor, for a link back to it
    question: Question
    lang: str = "en"  # the language the question is written in: the reader's, or English

    @property
    def anchor(self) -> str:
        """The box's own id on the card page."""
        return f"check-{self.heading_id}"


@dataclass(frozen=True)
class CardPart:
    """A stretch of the card's html and the box to show after it, if any."""

    html: str
    check: SectionCheck | None = None


def checked_positions(sections: list[str]) -> list[int]:
    """The positions of the main sections (by their English names), at most MAX_CHECKS."""
    return [i for i, title in enumerate(sections) if title not in UNCHECKED_SECTIONS][:MAX_CHECKS]


def _rank(card_id: str, section: str, item_id: str) -> int:
    # crc32, not hash(): the same in every process, so every server shows the same page.
    return zlib.crc32(f"{card_id}\n{section}\n{item_id}".encode())


def items_by_section(
    card_id: str, sections: list[str], items: list[QuizItem]
) -> dict[int, QuizItem]:
    """The item asked after each main section, by section position. Only graded items: a
    flashcard is rated by the learner, not checked. The bank links an item to its card, not
    to a section, so each section takes the unused item that ranks first for it; a section
    left when every item is used gets no box (one question twice on a page reads as a bug).
    `sections` are the English card's, so each edition asks the same items."""
    left = sorted((item for item in items if item.kind in GRADED_KINDS), key=lambda i: i.id)
    chosen: dict[int, QuizItem] = {}
    for position in checked_positions(sections):
        if not left:
            break
        item = min(left, key=lambda i: _rank(card_id, sections[position], i.id))
        left.remove(item)
        chosen[position] = item
    return chosen


def card_parts(
    card: Card, english_sections: list[str], bank: QuestionBank, lang: str
) -> list[CardPart]:
    """`card`'s html cut after each checked section, each cut with its box, the question in
    `lang` where the bank has it. `english_sections`: the English card's sections, which an
    edition's line up with one for one (app.cards.service.check_edition)."""
    cuts = card.html.split(SECTION_START)
    items = items_by_section(card.meta.id, english_sections, bank.for_cards([card.meta.id]))
    if not items or len(cuts) != len(english_sections) + 1:  # a card not cut by its renderer
        return [CardPart(card.html)]
    parts = [CardPart(cuts[0])]
    for position, section_html in enumerate(cuts[1:]):
        item = items.get(position)
        heading = _HEADING_ID.match(section_html)
        if item is None or heading is None:
            parts.append(CardPart(section_html))
            continue
        # Seeded as ranked: a generated item's inputs and a choice item's option order are
        # the same on every visit too.
        seed = _rank(card.meta.id, english_sections[position], item.id)
        asked = bank.in_language(item, lang)
        question = draw_question(asked, random.Random(seed))
        words = lang if asked is not item else "en"
        check = SectionCheck(position, html.unescape(heading.group(1)), question, words)
        parts.append(CardPart(section_html, check))
    return parts


def check_at(parts: list[CardPart], position: int) -> SectionCheck | None:
    """The box after the section at `position`, if that section has one."""
    return next((p.check for p in parts if p.check and p.check.position == position), None)
