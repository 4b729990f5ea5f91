"""One FLOP count everywhere: attention's Q K^T and A V counted over the whole context.

The compute calculator, the per-layer count, the planner and the cards all state attention at
4 n_layer n_ctx d_attn per token per forward pass (app/calc/flops.py, ATTENTION_CONVENTION);
the causal half, Kaplan et al.'s Table 1 term and Megatron-Core's count today, appears only as
a conversion, and where a card writes it, it says whose it is.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.calc.compute_query import ComputeQuery, compute_result
from app.calc.flops import (
    ATTENTION_CONVENTION,
    attention_flops_per_token,
    layer_forward_flops_per_token,
    training_flops_per_token,
)
from app.calc.model import PRESETS
from app.calc.planner.costs import Costs
from app.calc.planner.request import cluster, plan_request

CARDS = Path(__file__).resolve().parents[2] / "content" / "cards"
GPT3 = PRESETS["gpt3-175b"]


def test_the_convention_is_the_full_count_and_causal_is_half() -> None:
    assert ATTENTION_CONVENTION == "full"
    # Narayanan et al. 2021, Appendix: 4 B s^2 h per layer forward, i.e. 4 s h per token.
    assert attention_flops_per_token(1, 2048, 12288) == 4 * 2048 * 12288
    assert attention_flops_per_token(96, 2048, 12288, causal=True) == 2 * 96 * 2048 * 12288


def _compute(attention: bool, mode: str = "training") -> dict:
    return compute_result(
        ComputeQuery(preset="gpt3-175b", seq_len=2048, attention_term=attention, mode=mode)
    )


def test_compute_calculator_attention_term_is_the_per_layer_count() -> None:
    with_attention, without = _compute(True), _compute(False)
    forward = with_attention["forward_flops_per_token"] - without["forward_flops_per_token"]
    per_layer = layer_forward_flops_per_token(0, 2048, GPT3.heads * GPT3.dim_per_head)
    assert forward == pytest.approx(GPT3.layers * per_layer)
    assert with_attention["attention"]["forward_flops_per_token"] == pytest.approx(forward)
    assert with_attention["attention"]["causal_forward_flops_per_token"] == pytest.approx(
        forward / 2
    )


def test_planner_counts_attention_as_the_compute_calculator_does() -> None:
    request = plan_request(
        "gpt3-175b", cluster(nodes=8), global_batch_tokens=2048 * 64, seq_len=2048,
        token_budget=1e12,
    )  # fmt: skip
    costs = Costs(request)
    # The planner's model FLOPs per token less its weights' and logits' 3 x 2 P: attention.
    weights = 3 * (GPT3.layers * 2 * costs.layer_params + 2 * costs.logit_params)
    planner_attention = costs.model_flops_per_token - weights
    with_attention, without = _compute(True), _compute(False)
    calculator_attention = with_attention["flops_per_token"] - without["flops_per_token"]
    assert planner_attention == pytest.approx(calculator_attention, rel=1e-12)


def test_selective_recompute_is_counted_once_by_calculator_and_planner() -> None:
    d_attn = GPT3.heads * GPT3.dim_per_head
    selective = training_flops_per_token(1.0, GPT3.layers, 0, 2048, d_attn, "selective")
    none = training_flops_per_token(1.0, GPT3.layers, 0, 2048, d_attn, "none")
    extra = (
        _compute(True, "training_selective")["flops_per_token"] - _compute(True)["flops_per_token"]
    )
    assert (
        selective - none
        == pytest.approx(extra)
        == attention_flops_per_token(GPT3.layers, 2048, d_attn)
    )


# A card's formula for attention's FLOPs per token: a coefficient before n_ctx d_attn.
ATTENTION_FORMULA = re.compile(
    r"(\d+)\\,(?:n_\{\\text\{layer\}\}\\,)?n_\{\\text\{ctx\}\}\\,d_\{\\text\{attn\}\}"
)
# Where a card may write 2 n_ctx d_attn: next to the name of who counts the causal half that
# way, or for each of the two products on its own ("each", 各).
CAUSAL_OWNERS = re.compile(r"Kaplan|causal|因果|Megatron-Core|\beach\b|各", re.IGNORECASE)


def _card_texts() -> list[Path]:
    return sorted(CARDS.glob("*.md")) + sorted((CARDS / "zh-CN").glob("*.md"))


@pytest.mark.parametrize("path", _card_texts(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_cards_state_attention_in_the_one_count(path: Path) -> None:
    """Every attention formula in a card's prose is the full count (4 ...), or the causal half
    (2 ...) in a sentence that says whose count that is (or that it is one of the products)."""
    body = path.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
    problems = []
    for paragraph in re.split(r"\n\s*\n", body):
        for match in ATTENTION_FORMULA.finditer(paragraph):
            coefficient = int(match.group(1))
            sentence = paragraph[max(0, match.start() - 300) : match.end() + 200]
            if coefficient == 4:
                continue
            if coefficient == 2 and CAUSAL_OWNERS.search(sentence):
                continue
            problems.append(f"{match.group(0)} in: ...{sentence[:160]}...")
    assert not problems, problems
