"""The bank in content/quiz: every item parses, links to a card, and every generated item is
answerable for every combination of its choices; the format refuses what it should."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cards.service import CardLibrary
from app.config import ROOT_DIR
from app.quiz.bank import QuestionBank
from app.quiz.grading import parse_number, within_tolerance
from app.quiz.items import UNIT_WORDS, BankError, GeneratedItem
from app.quiz.service import question_for

CONTENT = ROOT_DIR / "content"
CARDS = CardLibrary.load(CONTENT / "cards")
try:
    BANK: QuestionBank | None = QuestionBank.load(CONTENT / "quiz")
    LOAD_ERROR = ""
except BankError as exc:  # reported by the first test, so the others still collect
    BANK, LOAD_ERROR = None, str(exc)
GENERATED = [i for i in (BANK.all() if BANK else []) if isinstance(i, GeneratedItem)]
# Past this many combinations an item is checked on a fixed random sample of them.
MAX_COMBINATIONS = 400
MIN_ITEMS_PER_CARD = 4


def test_every_file_parses() -> None:
    assert BANK is not None, LOAD_ERROR
    assert BANK.all()


def test_every_item_links_to_a_card_that_exists() -> None:
    assert BANK is not None, LOAD_ERROR
    assert BANK.card_problems(c.meta.id for c in CARDS.all()) == []


def test_every_unit_that_is_a_word_is_marked_for_translation() -> None:
    """A Chinese page says an answer's unit in Chinese ("你的答案（单位：天）"): a unit with
    words must be in UNIT_WORDS, which marks it for the catalogue."""
    assert BANK is not None, LOAD_ERROR
    symbols = {"", "%", "B", "GB", "GiB", "MB", "s", "ms", "min", "h", "FLOPs", "FLOPs/byte",
               "TFLOP/s"}  # fmt: skip
    worded = {getattr(item, "unit", "") for item in BANK.all()} - symbols
    assert "days" in worded
    assert worded == set(UNIT_WORDS)


def test_every_card_has_at_least_four_items() -> None:
    assert BANK is not None, LOAD_ERROR
    short = {
        c.meta.id: len(BANK.for_cards([c.meta.id]))
        for c in CARDS.all()
        if len(BANK.for_cards([c.meta.id])) < MIN_ITEMS_PER_CARD
    }
    assert short == {}, f"cards with fewer than {MIN_ITEMS_PER_CARD} quiz items: {short}"


def _combinations(item: GeneratedItem) -> list[dict[str, float | int]]:
    every = list(item.all_inputs())
    if len(every) <= MAX_COMBINATIONS:
        return every
    return random.Random(item.id).sample(every, MAX_COMBINATIONS)


@pytest.mark.parametrize("item", GENERATED, ids=lambda item: item.id)
def test_every_generated_item_is_answerable_across_its_choices(item: GeneratedItem) -> None:
    for inputs in _combinations(item):
        question = question_for(item, inputs)
        assert question.solution is not None
        answer = question.solution.answer
        assert math.isfinite(answer), (item.id, inputs)
        assert "{" not in question.prompt.replace("{}", "").split("$")[0], (item.id, inputs)
        assert question.solution.steps_latex, (item.id, inputs)
        # What a learner would type (6 significant figures) is graded right.
        typed = parse_number(f"{answer:.6g}", item.unit)
        assert within_tolerance(typed, answer, item.relative_tolerance), (item.id, inputs)


def _bank_from(tmp_path: Path, yaml_text: str) -> QuestionBank:
    (tmp_path / "x.yaml").write_text(yaml_text)
    return QuestionBank.load(tmp_path)


OPTION = "{text: t, correct: %s, explanation: e}"


NUMERIC = (
    "id: a, card: b, kind: numeric, prompt: p, answer: 46.2, unit: '%', solution: s, source: t"
)


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [
        ("- {id: a, card: b, kind: generated, generator: nope, prompt: p, unit: GB,"
         " relative_tolerance: 0.1, choices: {x: [1]}}", "unknown generator"),
        (f"- {{id: a, card: b, kind: single, prompt: p, options: [{OPTION % 'true'},"
         f" {OPTION % 'true'}]}}", "exactly one correct"),
        (f"- {{id: a, card: b, kind: multiple, prompt: p, options: [{OPTION % 'false'},"
         f" {OPTION % 'false'}]}}", "at least one correct"),
        (f"- {{id: a, card: b, kind: single, prompt: p, options: [{OPTION % 'true'}]}}",
         "at least 2"),
        ("- {id: a, card: b, kind: single, prompt: p, options: [{text: t, correct: true},"
         " {text: u, correct: false, explanation: e}]}", "explanation"),
        ("- {id: a, card: b, kind: numeric, prompt: p, answer: 1, unit: GB, solution: s}",
         "source"),
        (f"- {{{NUMERIC}, relative_tolerance: 0.1, absolute_tolerance: 1}}", "at most one of"),
        (f"- {{{NUMERIC}, absolute_tolerance: 0.01}}", "tighter than the source prints 46.2"),
        (f"- {{{NUMERIC}, absolute_tolerance: 1}}", "wider_because"),
        ("- {id: a, card: b, kind: flashcard, prompt: p, back: q, hint: h}", "hint"),
        ("- {id: a, card: b, kind: essay, prompt: p}", "essay"),
        ("- {id: a, card: b, kind: flashcard, prompt: p, back: q}\n"
         "- {id: a, card: c, kind: flashcard, prompt: p, back: q}", "used twice"),
    ],
)  # fmt: skip
def test_the_format_refuses_a_bad_item_and_says_why(
    tmp_path: Path, yaml_text: str, message: str
) -> None:
    with pytest.raises(BankError, match=message):
        _bank_from(tmp_path, yaml_text)


@pytest.mark.parametrize(
    ("answer", "tolerance"),
    [(46.2, 0.05), (448, 0.5), (30, 5), (3.14e23, 0.005e23), ("1.50", 0.005)],
)
def test_a_numeric_items_tolerance_is_the_precision_its_source_prints(
    tmp_path: Path, answer: float | str, tolerance: float
) -> None:
    written = f'"{answer}"' if isinstance(answer, str) else answer
    item = _bank_from(tmp_path, f"- {{{NUMERIC.replace('46.2', str(written))}}}").get("a")
    assert item.absolute_tolerance == pytest.approx(tolerance)
    assert within_tolerance(float(answer) + 0.99 * tolerance, item.answer, None, tolerance)
    assert not within_tolerance(float(answer) + 1.01 * tolerance, item.answer, None, tolerance)


def test_a_wider_tolerance_is_kept_with_its_reason(tmp_path: Path) -> None:
    text = f"- {{{NUMERIC}, absolute_tolerance: 0.5, wider_because: recall to the nearest percent}}"
    item = _bank_from(tmp_path, text).get("a")
    assert item.absolute_tolerance == 0.5 and item.printed == "46.2"


def test_every_distractor_says_why_it_is_wrong() -> None:
    """Every option explains itself after answering, in words of its own: not a bare "wrong",
    not the option repeated, not a sentence shared with another option."""
    bank = QuestionBank.load(ROOT_DIR / "content" / "quiz")
    short = []
    for item in bank.all():
        if item.kind not in ("single", "multiple"):
            continue
        reasons = [o.explanation.strip() for o in item.options]
        short += [(item.id, o.text) for o, why in zip(item.options, reasons, strict=True)
                  if len(why) < 30 or why == o.text.strip() or reasons.count(why) > 1]  # fmt: skip
    assert short == []


def test_an_item_naming_a_missing_card_is_a_link_problem(tmp_path: Path) -> None:
    bank = _bank_from(
        tmp_path, "- {id: a, card: no-such-card, kind: flashcard, prompt: p, back: q}"
    )
    assert bank.card_problems(["zero-stages"]) == ["quiz item a: no card 'no-such-card'"]


@settings(max_examples=60)
@given(st.lists(st.sampled_from([c.meta.id for c in CARDS.all()] + ["no-such-card"]), max_size=6))
def test_for_cards_gives_each_cards_items_in_the_order_the_cards_are_given(
    cards: list[str],
) -> None:
    assert BANK is not None, LOAD_ERROR
    found = BANK.for_cards(cards)
    # A card given twice counts at its last place; each card's items keep the bank's order.
    last_place = {card: i for i, card in enumerate(cards)}
    bank_order = [item for item in BANK.all() if item.card in last_place]
    assert found == sorted(bank_order, key=lambda item: last_place[item.card])
    assert len({item.id for item in found}) == len(found)
