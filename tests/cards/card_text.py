"""Reading a card's own text back in tests: its Markdown, its ```example blocks, and a formula
it must still state (a regex over the file, so editing the card's formula breaks the test)."""

from __future__ import annotations

import re

import yaml

from app.config import ROOT_DIR

CARDS = ROOT_DIR / "content" / "cards"


def card_text(card_id: str) -> str:
    return (CARDS / f"{card_id}.md").read_text(encoding="utf-8")


def example_blocks(card: str, kind: str) -> list[dict]:
    """The inputs of every ```example <kind> block in the card, in order."""
    blocks = re.findall(rf"```example {kind}\n(.*?)```", card, flags=re.DOTALL)
    return [yaml.safe_load(b) or {} for b in blocks]


def statement_of(card: str, pattern: str, what: str, flags: int = 0) -> re.Match[str]:
    """The card's statement of `what`, which the test then checks against the calculator."""
    match = re.search(pattern, card, flags)
    assert match, f"the card no longer states {what}"
    return match
