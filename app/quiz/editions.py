"""Quiz items in other languages: content/quiz/zh-CN/<name>.yaml beside content/quiz/<name>.yaml.

An edition entry gives only the words of an item (prompt, options' text and explanations, a
numeric item's solution, a flashcard's back); the id names the English item and the kind
repeats it, checked. Right answers, numbers, units, tolerances and a generated item's choices
are not in the edition at all (the models forbid them), so the translated item is the English
item with its words replaced, and grading reads the English answer keys whatever the language.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from app.cards.models import LANGUAGES, Slug
from app.quiz.items import (
    BankError,
    FlashcardItem,
    FreeResponseItem,
    GeneratedItem,
    Markdown,
    MultipleChoiceItem,
    NumericItem,
    QuizItem,
    SingleChoiceItem,
)
from app.yaml_text import load_yaml


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Slug
    prompt: Markdown


class OptionWords(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: Markdown
    explanation: Markdown


class ChoiceEntry(_Entry):
    kind: Literal["single", "multiple"]
    options: Annotated[list[OptionWords], Field(min_length=2, max_length=8)]
    explanation: str = ""


class NumericEntry(_Entry):
    kind: Literal["numeric"]
    solution: Markdown


class GeneratedEntry(_Entry):
    """Only the prompt: the generator fills its {placeholders} and writes the solution."""

    kind: Literal["generated"]


class FlashcardEntry(_Entry):
    kind: Literal["flashcard"]
    back: Markdown


class FreeEntry(_Entry):
    """A free response's words: the model answer, each rubric point in the English order, and
    optionally the key terms as this language writes them (each may list alternatives with
    " | ", so a Chinese answer may use the Chinese term or the English one). A follow-up is an
    entry of its own, under its own id."""

    kind: Literal["free"]
    model_answer: Markdown
    rubric: Annotated[list[Markdown], Field(min_length=2, max_length=8)]
    key_terms: list[Annotated[str, Field(min_length=1, max_length=80)]] | None = None


EditionEntry = Annotated[
    ChoiceEntry | NumericEntry | GeneratedEntry | FlashcardEntry | FreeEntry,
    Field(discriminator="kind"),
]
_ENTRIES = TypeAdapter(list[EditionEntry])
_PLACEHOLDER = re.compile(r"(?<!\{)\{(\w+)\}(?!\})")


def _placeholders(prompt: str) -> set[str]:
    """A generated prompt's {name} fields ({{...}} is LaTeX braces, not a field)."""
    return set(_PLACEHOLDER.findall(prompt))


def translate(item: QuizItem, entry: EditionEntry, name: str) -> QuizItem:
    """The English item in the entry's words; BankError (naming the file) if they do not fit."""
    where = f"{name}: item {item.id!r}"
    if entry.kind != item.kind:
        raise BankError(f"{where} is {item.kind!r} in English, not {entry.kind!r}")
    if isinstance(item, SingleChoiceItem | MultipleChoiceItem):
        assert isinstance(entry, ChoiceEntry)
        if len(entry.options) != len(item.options):
            raise BankError(f"{where} has {len(item.options)} options in English, "
                            f"{len(entry.options)} here")  # fmt: skip
        if item.explanation and not entry.explanation:
            raise BankError(f"{where} lacks the explanation the English item has")
        options = [o.model_copy(update={"text": w.text, "explanation": w.explanation})
                   for o, w in zip(item.options, entry.options, strict=True)]  # fmt: skip
        words = {"options": options, "explanation": entry.explanation}
    elif isinstance(item, NumericItem):
        assert isinstance(entry, NumericEntry)
        words = {"solution": entry.solution}
    elif isinstance(item, FlashcardItem):
        assert isinstance(entry, FlashcardEntry)
        words = {"back": entry.back}
    elif isinstance(item, FreeResponseItem):
        assert isinstance(entry, FreeEntry)
        if len(entry.rubric) != len(item.rubric):
            raise BankError(f"{where} has {len(item.rubric)} rubric points in English, "
                            f"{len(entry.rubric)} here")  # fmt: skip
        if entry.key_terms is not None and len(entry.key_terms) != len(item.key_terms):
            raise BankError(f"{where} has {len(item.key_terms)} key terms in English, "
                            f"{len(entry.key_terms)} here")  # fmt: skip
        rubric = [p.model_copy(update={"point": text})
                  for p, text in zip(item.rubric, entry.rubric, strict=True)]  # fmt: skip
        words = {"model_answer": entry.model_answer, "rubric": rubric}
        if entry.key_terms is not None:
            words["key_terms"] = entry.key_terms
    else:
        assert isinstance(item, GeneratedItem)
        if _placeholders(entry.prompt) != _placeholders(item.prompt):
            raise BankError(f"{where} has fields {sorted(_placeholders(entry.prompt))}, the "
                            f"English prompt {sorted(_placeholders(item.prompt))}")  # fmt: skip
        words = {}
    return item.model_copy(update={"prompt": entry.prompt, **words})


def load_editions(quiz_dir: Path, items_by_file: dict[str, list[QuizItem]]
                  ) -> dict[tuple[str, str], QuizItem]:  # fmt: skip
    """Every translated item by (lang, id), from quiz_dir/<LANGUAGES folder>/<name>.yaml; an
    entry may translate only the items of the English file with its name."""
    editions: dict[tuple[str, str], QuizItem] = {}
    for lang, folder in LANGUAGES.items():
        labels = _number_labels(quiz_dir / "labels" / f"{folder}.yaml")
        for path in sorted((quiz_dir / folder).glob("*.yaml")):
            name = f"{folder}/{path.name}"
            if path.name not in items_by_file:
                raise BankError(f"{name}: no English quiz file {path.name} to translate")
            try:
                raw = load_yaml(path.read_text(encoding="utf-8")) or []
                entries = _ENTRIES.validate_python(raw)
            except (yaml.YAMLError, ValidationError, TypeError) as exc:
                raise BankError(f"{name}: {exc}") from exc
            english = {item.id: item for item in items_by_file[path.name]}
            for entry in entries:
                if entry.id not in english:
                    raise BankError(f"{name}: {path.name} has no item {entry.id!r}")
                if (lang, entry.id) in editions:
                    raise BankError(f"{name}: item {entry.id!r} is translated twice")
                edition = translate(english[entry.id], entry, name)
                if isinstance(edition, FreeResponseItem) and edition.numbers:
                    edition = _with_labels(edition, labels, name)
                editions[lang, entry.id] = edition
    return editions


def _number_labels(path: Path) -> dict[str, str]:
    """A language's words for the free responses' number-check labels (English: theirs), one
    table for the bank, since the same label recurs in many items and their follow-ups."""
    if not path.exists():
        return {}
    try:
        table = load_yaml(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise BankError(f"labels/{path.name}: {exc}") from exc
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in table.items()
    ):
        raise BankError(f"labels/{path.name}: a mapping of English label to its words")
    return table


def _with_labels(item: FreeResponseItem, labels: dict[str, str], name: str) -> FreeResponseItem:
    missing = [n.label for n in item.numbers if n.label not in labels]
    if missing:
        raise BankError(f"{name}: item {item.id!r}: no words for the number label(s) {missing} "
                        "in labels/")  # fmt: skip
    numbers = [n.model_copy(update={"label": labels[n.label]}) for n in item.numbers]
    return item.model_copy(update={"numbers": numbers})
