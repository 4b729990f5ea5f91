"""What the pages show of a free response: each rubric point with a link to the section of the
card that teaches it, in the reader's language, and the comparison page's parts."""

from __future__ import annotations

from dataclasses import dataclass

from app.cards.service import CardLibrary
from app.quiz.items import FreeResponseItem


@dataclass(frozen=True)
class RubricRow:
    index: int
    point: str  # Markdown, in the reader's language
    weight: int
    section_url: str  # the card's section, in the card the reader sees
    section_title: str


def rubric_rows(cards: CardLibrary, item: FreeResponseItem, lang: str) -> list[RubricRow]:
    """`item` in the reader's language; its sections are the English card's anchors, and a
    card's editions have their H2 sections in the same order (the loader checks it), so the
    edition's anchor is the one in the same place."""
    english, shown = cards.get(item.card), cards.shown_in(item.card, lang)
    rows = []
    for index, point in enumerate(item.rubric):
        url, title = f"/cards/{item.card}", ""
        if english is not None and shown is not None and point.section in english.section_ids:
            place = english.section_ids.index(point.section)
            if place < len(shown.section_ids):
                url += f"#{shown.section_ids[place]}"
                title = shown.sections[place]
        rows.append(RubricRow(index, point.point, point.weight, url, title))
    return rows
