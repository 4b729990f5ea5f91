"""The fact audit (app/cards/audit.py): every number in a card's prose is accounted for."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from app.cards.audit import (
    audit_problems,
    evaluate,
    half_unit,
    numbers_in,
    prose_figures,
    to_figure,
    unit_constant,
)
from app.cards.service import CardError, CardLibrary, _markdown, render_card
from app.config import ROOT_DIR
from app.quiz.bank import QuestionBank
from app.quiz.free_grading import expected_value
from app.quiz.items import FreeResponseItem

CARDS_DIR = ROOT_DIR / "content" / "cards"


def figures(markdown: str) -> list[str]:
    return list(prose_figures(_markdown().parse(markdown)).values())


@pytest.mark.parametrize(
    ("prose", "found"),
    [
        ("A 70B model on 1,024 GPUs reaches 41% MFU.", ["70", "1,024", "41"]),
        ("Mixed-precision Adam needs $16\\Psi$ bytes, $2+2+12$.", ["16", "12"]),
        ("| stage | GB |\n|--|--|\n| 3 | 1.9 |\n", ["1.9"]),
        ("$$x = 7.5e9$$", ["7.5e9"]),
        # Not figures: single digits, years, names, notation and places in a source.
        ("ZeRO-3 on 8 GPUs, stage 2, in 2020.", []),
        ("H100, A100, fp16, bf16 and Llama 3.", []),
        ("$10^{9}$ bytes, $2^{30}$ bytes, $N_{12}$.", []),
        ("Section 3.1, Table 5, Eq. 12, Sections 3.2 and 6.3, arXiv:1910.02054.", []),
        ("## In 30 seconds\n\nhi\n", []),
        ("Text.\n\n## Sources\n\n- Paper, 2021, page 417.\n", []),
        ("`NCCL_TIMEOUT=1800` and\n\n```\n600\n```\n", []),
    ],
)
def test_the_audit_reads_figures_from_prose_only(prose: str, found: list[str]) -> None:
    assert figures(prose) == found


def test_derived_figures_are_evaluated_at_their_printed_precision() -> None:
    stated = {Decimal("120"): "120", Decimal("1.5"): "1.5"}
    sourced = [Decimal("7.5"), Decimal("16")]
    assert audit_problems(stated, sourced, [], {Decimal("120"): "7.5 * 16",
                                                Decimal("1.5"): "3 / 2"}) == []  # fmt: skip
    wrong = audit_problems(stated, sourced, [], {Decimal("120"): "7.5 * 17",
                                                 Decimal("1.5"): "3 / 2"})  # fmt: skip
    assert wrong[0] == "derived 120: 7.5 * 17 = 127.5, which does not round to 120"


def test_a_derived_figure_rests_on_sourced_ones() -> None:
    problems = audit_problems({}, [], [], {Decimal("840"): "70 * 12"})
    assert problems == ["derived 840: 70 in '70 * 12' has no source",
                        "derived 840: 12 in '70 * 12' has no source"]  # fmt: skip
    assert audit_problems({}, [Decimal("70")], [], {Decimal("70000"): "70 * 1000"}) == []


def test_only_arithmetic_is_evaluated() -> None:
    assert evaluate("2 × (3 + 4) ** 2 / 7")[0] == 14
    with pytest.raises(ValueError, match="only numbers"):
        evaluate("__import__('os').getcwd()")


@given(st.decimals(min_value=Decimal("0.001"), max_value=Decimal("1e9"), places=3))
def test_anything_within_half_a_unit_rounds_to_the_printed_figure(value: Decimal) -> None:
    printed = value.quantize(Decimal("0.1"))
    if printed == 0:
        return
    assert abs(value - printed) <= half_unit(printed)


def test_half_a_unit_treats_an_integers_trailing_zeros_as_rounding() -> None:
    assert half_unit(Decimal("280")) == 5
    assert half_unit(Decimal("448")) == Decimal("0.5")
    assert half_unit(Decimal("1.50")) == Decimal("0.005")
    assert half_unit(Decimal("3.14E+23")) == Decimal("5E+20")


CHECKED = """---
id: sample
title: A sample card
checked: 2026-11-25
sources:
  - cite: "Rajbhandari et al., ZeRO, arXiv:1910.02054"
    at: "Figure 1"
    figures: [7.5, 64]
derived:
  120: "7.5 * 16"
inputs: [16]
---
## In 30 seconds

A 7.5 B model on 64 GPUs needs 120 GB of model states at 16 bytes each.

## Common mistakes

m

## Follow-up questions

f

## Sources

- ZeRO
"""


def test_a_checked_card_that_accounts_for_its_figures_loads() -> None:
    card = render_card(CHECKED, "sample.md")
    assert card.meta.checked is not None and set(card.figures) == {7.5, 64, 120, 16}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("64 GPUs", "96 GPUs", "96 appears in the prose but no source states it"),
        ('    at: "Figure 1"\n', "", "at\n  Field required"),
        ('120: "7.5 * 16"', '120: "7.5 * 15"', "does not round to 120"),
        ("checked: 2026-11-25", "checked: 2999-01-01", "in the future"),
    ],
)
def test_a_checked_card_with_an_unaccounted_figure_is_refused(
    old: str, new: str, message: str
) -> None:
    assert old in CHECKED
    with pytest.raises(CardError, match=message):
        render_card(CHECKED.replace(old, new), "sample.md")


def test_every_card_is_checked_and_accounts_for_its_figures() -> None:
    """The loader enforces the audit on every card with `checked`; every card must have it."""
    library = CardLibrary.load(CARDS_DIR)
    unchecked = [c.meta.id for c in library.all() if c.meta.checked is None]
    assert unchecked == []
    assert all(s.at for c in library.all() for s in c.meta.sources)


def test_every_numeric_quiz_answer_cites_where_it_is_printed() -> None:
    bank = QuestionBank.load(ROOT_DIR / "content" / "quiz")
    numeric = [i for i in bank.all() if i.kind == "numeric"]
    assert numeric and all(i.source and i.printed for i in numeric)


def test_the_unsourced_command_lists_each_figure_with_its_line(tmp_path: Path) -> None:
    from app.cards.unsourced import report

    card = tmp_path / "sample.md"
    card.write_text(CHECKED.replace("64 GPUs", "96 GPUs"), encoding="utf-8")
    (line,) = report(card)
    assert "96 appears in the prose" in line and "A 7.5 B model on 96 GPUs" in line


def quiz_figures_unaccounted() -> list[tuple[str, str]]:
    """Numbers in hand-written quiz items that their card's audit does not account for.
    A quiz item practises its card: its figures are the card's, with the card's sources."""
    library = CardLibrary.load(CARDS_DIR)
    bank = QuestionBank.load(ROOT_DIR / "content" / "quiz")
    missing = []
    for item in bank.all():
        if item.kind == "generated":  # its numbers come from the calculator
            continue
        card = library.get(item.card)
        assert card is not None
        accounted = card.accounted_figures()
        texts = [item.prompt, *(getattr(item, f, "") or "" for f in
                 ("explanation", "solution", "back", "source", "wider_because"))]  # fmt: skip
        for option in getattr(item, "options", []):
            texts += [option.text, option.explanation]
        if isinstance(item, FreeResponseItem):
            # A free response also states its scenario's inputs and what its number checks
            # compute, in English and in Chinese.
            accounted = accounted | {to_figure(v) for v in item.inputs}
            for figure, expression in item.derived.items():
                value, used = evaluate(expression)
                assert abs(Decimal(repr(value)) - to_figure(figure)) <= half_unit(
                    to_figure(figure)
                ), f"{item.id}: derived {figure} is {expression} = {value}"
                # As a card's derived figures: single digits and unit constants (60, 1000)
                # need no source.
                missing += [(item.id, f"{u} in {expression!r}") for u in used
                            if u not in accounted and u >= 10 and not unit_constant(u)]  # fmt: skip
            accounted = accounted | {to_figure(f) for f in item.derived}
            computed = [expected_value(check) for check in item.numbers]
            for edition in (item, bank.in_language(item, "zh")):
                texts += [edition.prompt, edition.model_answer,
                          *(p.point for p in edition.rubric)]  # fmt: skip
            missing += [
                (item.id, written)
                for text in texts
                for written, figure in numbers_in(text)
                if figure not in accounted and not _computed_near(figure, computed)
            ]
            continue
        missing += [(item.id, written) for text in texts
                    for written, figure in numbers_in(text) if figure not in accounted]  # fmt: skip
    return missing


def _computed_near(figure: Decimal, computed: list[float]) -> bool:
    """The figure is a calculator's value as written: rounded to its printed precision, or to
    3 significant figures (17.5 for 17.5; 293 for 293.125)."""
    return any(abs(float(figure) - value) <= max(float(half_unit(figure)), abs(value) * 0.005)
               for value in computed)  # fmt: skip


def test_every_figure_in_a_quiz_item_is_one_its_card_accounts_for() -> None:
    assert quiz_figures_unaccounted() == []


def test_a_card_page_says_when_its_figures_were_checked(client: TestClient) -> None:
    card = client.app.state.cards.get("zero-stages")
    page = client.get("/cards/zero-stages").text
    assert 'id="fact-check"' in page and card.meta.checked.isoformat() in page
    assert f"against {len(card.meta.sources)} sources" in page
