"""The question bank: content/quiz/*.yaml, validated when the app starts.

Each file is a list of items (app/quiz/items.py: `kind` picks the item's shape); its editions in
other languages, beside it, give only the words (app/quiz/editions.py). An item names the card it
practises (`card`), which is the only link between cards and items.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml
from pydantic import TypeAdapter, ValidationError

from app.quiz.editions import load_editions
from app.quiz.generators import GENERATORS
from app.quiz.items import LEVELS, BankError, FreeResponseItem, GeneratedItem, Level, QuizItem
from app.yaml_text import load_yaml

_ITEMS = TypeAdapter(list[QuizItem])


class QuestionBank:
    def __init__(self, items: list[QuizItem],
                 editions: dict[tuple[str, str], QuizItem] | None = None) -> None:  # fmt: skip
        """`editions`: translated items by (lang, id), as app.quiz.editions loads them."""
        self._by_id = {item.id: item for item in items}
        self._editions = editions or {}
        self._card_levels: dict[str, Level] = {}
        # Each opener's follow-ups, in the bank's order: a mock interview asks for them per
        # item drawn, so they are found once here rather than by a scan each time.
        self._follow_ups: dict[str, list[FreeResponseItem]] = {}
        # Each card's items in the bank's order: pages ask per card (the dashboard for every
        # card on the path), and a scan of the whole bank each time was most of their work.
        self._by_card: dict[str, list[QuizItem]] = {}
        for item in self._by_id.values():
            self._by_card.setdefault(item.card, []).append(item)
        for item in items:
            if isinstance(item, FreeResponseItem) and item.follows:
                self._follow_ups.setdefault(item.follows, []).append(item)

    def set_card_difficulties(self, difficulty: dict[str, int]) -> None:
        """Each card's difficulty (1-3), for the level of the items that do not set one."""
        self._card_levels = {card: LEVELS[min(max(d, 1), 3) - 1] for card, d in difficulty.items()}

    def level_of(self, item: QuizItem) -> Level:
        """The item's own level, else its card's (a card of difficulty 2 asks mid-level)."""
        return item.level or self._card_levels.get(item.card, "mid")

    def follow_ups(self, item: QuizItem) -> list[FreeResponseItem]:
        """The items that follow `item` directly, in the bank's order."""
        return list(self._follow_ups.get(item.id, []))

    @classmethod
    def load(cls, quiz_dir: Path) -> QuestionBank:
        """The items of quiz_dir/*.yaml, and their editions in quiz_dir/<LANGUAGES folder>."""
        by_file: dict[str, list[QuizItem]] = {}
        for path in sorted(quiz_dir.glob("*.yaml")):
            try:
                raw = load_yaml(path.read_text(encoding="utf-8")) or []
                by_file[path.name] = _flattened(_ITEMS.validate_python(raw))
            except (yaml.YAMLError, ValidationError, TypeError, ValueError) as exc:
                raise BankError(f"{path.name}: {exc}") from exc
        items = [item for file_items in by_file.values() for item in file_items]
        for item in items:
            if isinstance(item, GeneratedItem) and item.generator not in GENERATORS:
                raise BankError(f"{item.id}: unknown generator {item.generator!r}")
            for check in getattr(item, "numbers", []):
                if check.generator not in GENERATORS:
                    raise BankError(f"{item.id}: unknown generator {check.generator!r}")
        seen: set[str] = set()
        for item in items:
            if item.id in seen:
                raise BankError(f"quiz item id {item.id!r} is used twice in {quiz_dir}")
            seen.add(item.id)
        return cls(items, load_editions(quiz_dir, by_file))

    def get(self, item_id: str) -> QuizItem | None:
        return self._by_id.get(item_id)

    def in_language(self, item: QuizItem, lang: str) -> QuizItem:
        """The item in `lang` ("en" or a key of LANGUAGES) where that edition is written, else
        the English item. Only the words differ: the answer keys are the English item's."""
        return self._editions.get((lang, item.id), item)

    def translated(self, lang: str) -> list[QuizItem]:
        """The items written in `lang`."""
        return [e for item in self._by_id.values() if (e := self._editions.get((lang, item.id)))]

    def all(self) -> list[QuizItem]:
        return list(self._by_id.values())

    def for_cards(self, card_ids: Iterable[str]) -> list[QuizItem]:
        """Items of these cards, in the order the cards are given."""
        order = {card: i for i, card in enumerate(card_ids)}  # a card given twice: its last place
        return [item for card in sorted(order, key=order.__getitem__)
                for item in self._by_card.get(card, ())]  # fmt: skip

    def section_problems(self, sections: dict[str, list[str]]) -> list[str]:
        """Every rubric point whose `section` is not an H2 anchor of its card (`sections`:
        each card's H2 anchors, in order)."""
        return [
            f"quiz item {item.id}: rubric section {point.section!r} is not a section of "
            f"{item.card} ({', '.join(sections.get(item.card, []))})"
            for item in self._by_id.values() if isinstance(item, FreeResponseItem)
            for point in item.rubric if point.section not in sections.get(item.card, [])
        ]  # fmt: skip

    def card_problems(self, card_ids: Iterable[str]) -> list[str]:
        """Every item whose `card` is not a card."""
        known = set(card_ids)
        return [
            f"quiz item {item.id}: no card {item.card!r}"
            for item in self._by_id.values()
            if item.card not in known
        ]


def _flattened(items: list[QuizItem]) -> list[QuizItem]:
    """The file's items with each free response's follow-ups as items of their own."""
    return [
        flat
        for item in items
        for flat in (item.flattened() if isinstance(item, FreeResponseItem) else [item])
    ]
