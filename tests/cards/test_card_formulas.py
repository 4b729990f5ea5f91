"""Formulas a card states in prose agree with the calculator that computes its worked example.

The loader (app/cards/service.py) renders every example through the calculators, but a formula
typed into a card's table is text; these tests read it back and evaluate it.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from app.calc.comm_volume import stage_params, step_calls, zero_elements
from app.calc.communication_query import CommunicationQuery
from tests.cards.card_text import example_blocks

CARDS = Path(__file__).resolve().parents[2] / "content" / "cards"
COMM_CARD = CARDS / "comm-volume-per-layer.md"


def _zero_coefficient(card: str, stage: str) -> str:
    """The factor in front of (N_d-1)/N_d * Psi in the card's table row for `stage`."""
    formula = r"\$(.*?)\\frac\{N_d-1\}\{N_d\}\\Psi\$"
    row = re.search(rf"^\| {re.escape(stage)} \|[^|]*\| {formula} \|", card, flags=re.MULTILINE)
    assert row, f"no {stage} row with a (N_d-1)/N_d Psi formula in {COMM_CARD.name}"
    return row.group(1)


def _evaluate(coefficient: str, m: int) -> int:
    """Evaluate a coefficient such as '2', '(m+1)' or '3m' written in the card's notation."""
    if not re.fullmatch(r"[0-9m+()]*", coefficient):
        raise ValueError(f"unexpected notation in the card: {coefficient!r}")
    python = re.sub(r"(\d)(?=[m(])", r"\1*", coefficient) or "1"
    return eval(python, {"__builtins__": {}}, {"m": m})  # noqa: S307 - checked charset above


@pytest.mark.parametrize(("stage", "label"), [(1, "ZeRO-1"), (2, "ZeRO-2"), (3, "ZeRO-3")])
def test_comm_card_zero_rows_match_zero_elements(stage: int, label: str) -> None:
    card = COMM_CARD.read_text(encoding="utf-8")
    coefficient = _zero_coefficient(card, label)
    for m in (1, 2, 8, 33):
        for n in (2, 4, 64):
            psi = 7e9
            stated = _evaluate(coefficient, m) * Fraction(n - 1, n) * Fraction(psi)
            assert float(stated) == pytest.approx(zero_elements(psi, n, stage, m), rel=1e-12)


def test_comm_card_zero3_formula_matches_the_calculator_on_its_worked_example() -> None:
    card = COMM_CARD.read_text(encoding="utf-8")
    zero3 = [e for e in example_blocks(card, "communication") if e.get("zero_stage") == 3]
    assert zero3, "the card's ZeRO-3 worked example is gone"
    query = CommunicationQuery.model_validate(zero3[0])
    layout = query.layout()
    dense, expert = stage_params(layout)
    assert expert == 0  # Llama 3 70B is dense: one DP group, one Psi
    n_d, m = layout.dp * layout.cp, layout.microbatches
    stated = _evaluate(_zero_coefficient(card, "ZeRO-3"), m) * (n_d - 1) / n_d * dense
    computed = sum(c.elements_per_step for c in step_calls(layout) if c.strategy == "dp")
    assert computed == pytest.approx(stated, rel=1e-12)
    # DeepSpeed's convention, not (2m + 1): the reduce-scatter runs every micro-batch.
    assert computed == pytest.approx(3 * m * (n_d - 1) / n_d * dense, rel=1e-12)
    assert computed != pytest.approx((2 * m + 1) * (n_d - 1) / n_d * dense, rel=1e-6)
