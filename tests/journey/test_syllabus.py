"""The syllabus covers every card once, prerequisites first, in the seven levels."""

from __future__ import annotations

import pytest

from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.journey.syllabus import LEVELS, problems, steps, syllabus_order

LIBRARY = CardLibrary.load(ROOT_DIR / "content" / "cards")


def test_the_syllabus_holds_every_card_once_after_its_prerequisites() -> None:
    assert problems(LIBRARY) == []
    assert sorted(syllabus_order()) == sorted(c.meta.id for c in LIBRARY.all())


def test_the_levels_run_from_foundations_to_design() -> None:
    assert [level.key for level in LEVELS] == [
        "foundations", "memory", "parallelism", "pipelines", "communication", "scale", "design",
    ]  # fmt: skip


def test_steps_are_numbered_across_levels_and_find_their_calculator_and_demo() -> None:
    path = steps(LIBRARY)
    assert [s.number for s in path] == list(range(1, len(path) + 1))
    zero = next(s for s in path if s.card_id == "zero-stages")
    assert zero.calculator == "memory" and zero.demo == "all-reduce"
    assert steps(LIBRARY, "zh")[0].card.lang == "zh"


def test_problems_name_a_card_left_out_or_placed_too_early(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.journey.syllabus as syllabus

    first, *rest = LEVELS
    moved = syllabus.Level(first.key, first.title, ("zero-stages", *first.cards))
    memory = syllabus.Level(rest[0].key, rest[0].title,
                            tuple(c for c in rest[0].cards if c != "zero-stages"))  # fmt: skip
    monkeypatch.setattr(syllabus, "LEVELS", (moved, memory, *rest[1:]))
    found = problems(LIBRARY)
    assert "zero-stages comes before its prerequisite memory-anatomy" in found
    monkeypatch.setattr(syllabus, "LEVELS", (memory, *rest[1:]))
    assert "card training-compute is not on the syllabus" in problems(LIBRARY)
