"""The bank's generated items, read straight from content/quiz, for the generator tests."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import yaml

from app.config import ROOT_DIR

QUIZ_DIR = ROOT_DIR / "content" / "quiz"


def generated_items() -> list[dict[str, Any]]:
    """Every generated item, as written in its YAML file."""
    return [
        item
        for path in sorted(QUIZ_DIR.glob("*.yaml"))
        for item in yaml.safe_load(path.read_text(encoding="utf-8")) or []
        if item.get("kind") == "generated"
    ]


def all_inputs(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every combination of the item's choices (the cartesian product)."""
    names = list(item["choices"])
    for values in itertools.product(*(item["choices"][name] for name in names)):
        yield dict(zip(names, values, strict=True))
