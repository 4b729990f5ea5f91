"""The question bank: content/quiz/*.yaml, validated when the app starts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.cards.models import Slug
from app.quiz.generators import GENERATORS


class BankError(ValueError):
    """A quiz file that does not meet the format; names the file and what is wrong."""


class GeneratedNumericItem(BaseModel):
    """A numeric question whose inputs are drawn at random and whose answer a calculator gives."""

    model_config = ConfigDict(extra="forbid")

    id: Slug
    card: Slug
    kind: Literal["generated"]
    generator: str
    prompt: str
    unit: str
    relative_tolerance: Annotated[float, Field(gt=0, lt=0.5)]
    choices: dict[str, Annotated[list[float | int], Field(min_length=1)]]


class QuestionBank:
    def __init__(self, items: list[GeneratedNumericItem]) -> None:
        self._by_id = {item.id: item for item in items}

    @classmethod
    def load(cls, quiz_dir: Path) -> QuestionBank:
        items: list[GeneratedNumericItem] = []
        for path in sorted(quiz_dir.glob("*.yaml")):
            try:
                raw = yaml.safe_load(path.read_text(encoding="utf-8")) or []
                items += [GeneratedNumericItem.model_validate(entry) for entry in raw]
            except (yaml.YAMLError, ValidationError, TypeError) as exc:
                raise BankError(f"{path.name}: {exc}") from exc
        for item in items:
            if item.generator not in GENERATORS:
                raise BankError(f"{item.id}: unknown generator {item.generator!r}")
        ids = [item.id for item in items]
        if len(ids) != len(set(ids)):
            raise BankError(f"duplicate quiz item ids in {quiz_dir}")
        return cls(items)

    def get(self, item_id: str) -> GeneratedNumericItem | None:
        return self._by_id.get(item_id)

    def all(self) -> list[GeneratedNumericItem]:
        return list(self._by_id.values())
