"""The bank's free responses: at least three per card, with a follow-up chain of two or more,
each in English and Chinese; every model answer passes its own automatic checks (it states
the calculator's figures and uses its key terms), and its rubric points at the card's sections.
Their figures are audited with the quiz's (tests/cards/test_audit.py)."""

from __future__ import annotations

import pytest

from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.quiz.bank import QuestionBank
from app.quiz.free_grading import auto_checks, expected_value
from app.quiz.items import LEVELS, FreeResponseItem

CONTENT = ROOT_DIR / "content"
CARDS = CardLibrary.load(CONTENT / "cards")
BANK = QuestionBank.load(CONTENT / "quiz")
FREE = [i for i in BANK.all() if isinstance(i, FreeResponseItem)]
MIN_OPENERS_PER_CARD = 3
MIN_FOLLOW_UPS_IN_A_CHAIN = 2


def test_every_card_has_three_free_responses_and_a_follow_up_chain() -> None:
    short, no_chain = [], []
    for card in CARDS.all():
        openers = [i for i in FREE if i.card == card.meta.id and i.follows is None]
        if len(openers) < MIN_OPENERS_PER_CARD:
            short.append(f"{card.meta.id}: {len(openers)}")
        if not any(len(BANK.follow_ups(i)) >= MIN_FOLLOW_UPS_IN_A_CHAIN for i in openers):
            no_chain.append(card.meta.id)
    assert short == [] and no_chain == []


@pytest.mark.parametrize("item", FREE, ids=lambda i: i.id)
def test_a_model_answer_passes_its_own_checks_in_both_languages(item: FreeResponseItem) -> None:
    for lang in ("en", "zh"):
        edition = BANK.in_language(item, lang)
        assert lang == "en" or edition is not item, f"{item.id} has no Chinese edition"
        checks = auto_checks(edition, edition.model_answer)
        failed = [c.label for c in checks.figures if not c.passed]
        failed += [c.term for c in checks.terms if not c.passed]
        assert failed == [], f"{item.id} ({lang}): the model answer misses {failed}"


@pytest.mark.parametrize("item", FREE, ids=lambda i: i.id)
def test_every_number_check_computes_and_every_section_exists(item: FreeResponseItem) -> None:
    for check in item.numbers:
        assert expected_value(check) > 0, f"{item.id}: {check.label} computes to nothing"
    card = CARDS.get(item.card)
    assert card is not None
    assert {p.section for p in item.rubric} <= set(card.section_ids)


def test_every_free_response_has_a_level_and_levels_are_mixed() -> None:
    assert all(i.level in LEVELS for i in FREE if i.follows is None)
    assert {i.level for i in FREE} == set(LEVELS)


def test_a_follow_up_that_changes_a_condition_asks_the_calculator_again() -> None:
    changed = [i for i in FREE if i.follows and i.numbers
               and BANK.get(i.follows).numbers]  # type: ignore[union-attr]  # fmt: skip
    assert changed, "no follow-up changes a condition of its opener"
    moved = [i for i in changed if {expected_value(c) for c in i.numbers}
             != {expected_value(c) for c in BANK.get(i.follows).numbers}]  # type: ignore[union-attr]  # fmt: skip
    assert moved, "every changed follow-up computes the same figures as its opener"
