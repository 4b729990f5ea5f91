"""Formulas the compute cards state in prose agree with the calculators behind their examples.

Each test reads the formula back from the card (a regex over the card file, so editing the
card's formula breaks the test) and evaluates it against the calculator function on the card's
own worked-example inputs. Batch: training-compute, training-time-mfu, roofline, scaling-walls,
step-time-profile (loss-curves states no formula a calculator computes).
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from app.calc.comm import Collective, ring_factor
from app.calc.compute_query import ComputeQuery, compute_result
from app.calc.flops import (
    flops_per_token,
    forward_flops_per_token,
    megatron_flops_per_iteration,
    utilization_from_throughput,
)
from app.calc.hardware import ACCELERATORS, peak_flops
from app.calc.memory import MIXED_PRECISION_ADAM, model_states_per_gpu
from app.calc.roofline import dot_product, elementwise, matmul
from tests.cards.card_text import card_text, example_blocks, statement_of

# --- training-compute ---------------------------------------------------------------------


def test_training_compute_megatron_equation_matches_the_calculator() -> None:
    """F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) as the card prints it, on GPT-3's shape."""
    card = card_text("training-compute")
    eq = statement_of(
        card,
        r"F = (\d+)\\,B\\,s\\,l\\,h\^2\\left\(1 \+ \\frac\{s\}\{(\d+)h\} \+ "
        r"\\frac\{V\}\{(\d+)\\,l\\,h\}\\right\)",
        "Megatron's equation (3)",
    )
    lead, attn, logit = (int(g) for g in eq.groups())
    query = ComputeQuery.model_validate(example_blocks(card, "compute")[0])
    layers, hidden, vocab, _ = query.shape()
    b, s = query.batch, query.seq_len
    stated = (
        lead
        * b
        * s
        * layers
        * hidden**2
        * (1 + s / (attn * hidden) + vocab / (logit * layers * hidden))
    )
    computed = megatron_flops_per_iteration(b, s, layers, hidden, vocab, recompute=True)
    assert stated == pytest.approx(computed, rel=1e-12)
    # "The 96 is 4 x 24": four passes of 24 B s h^2 per layer.
    passes = statement_of(card, r"The (\d+) is \$(\d+) \\times (\d+)\$", "the 96 = 4 x 24 split")
    assert int(passes.group(1)) == lead == int(passes.group(2)) * int(passes.group(3))


def test_training_compute_per_token_counts_match_the_calculator() -> None:
    """6N training, 2N + 2N + 4N = 8N with full recompute, 2N inference; 6ND on the example."""
    card = card_text("training-compute")
    assert statement_of(card, r"C \\approx (\d)ND", "C = 6ND").group(1) == "6"
    recompute = statement_of(card, r"\$(\d)N \+ (\d)N \+ (\d)N = (\d)N\$", "the 8N recompute sum")
    terms = [int(g) for g in recompute.groups()]
    assert sum(terms[:3]) == terms[3]
    n = 1.746e11
    assert flops_per_token(n, "training") == pytest.approx(6 * n)
    assert flops_per_token(n, "training_recompute") == pytest.approx(terms[3] * n)
    assert flops_per_token(n, "inference") == pytest.approx(terms[0] * n)

    example = example_blocks(card, "compute")[0]
    result = compute_result(ComputeQuery.model_validate(example))
    assert result["total_flops"] == pytest.approx(6 * result["params"] * float(example["tokens"]))
    # "within a fraction of a percent of the published 3.14e23" (Brown et al., Table D.1).
    assert result["total_flops"] == pytest.approx(3.14e23, rel=0.01)


def test_training_compute_attention_term_matches_the_calculator() -> None:
    """The card's full count, 4 n_layer n_ctx d_attn per token per forward, and the ratio
    n_ctx / (6 d_model) are what the calculator computes (app/calc/flops.py's one count)."""
    card = card_text("training-compute")
    term = statement_of(
        card,
        r"\$(\d)\\,n_\{\\text\{layer\}\}\\,n_\{\\text\{ctx\}\}\\,d_\{\\text\{attn\}\}\$ per token "
        r"in all",
        "the full attention count",
    )
    attn = int(term.group(1))
    ratio = int(
        statement_of(
            card, r"n_\{\\text\{ctx\}\}/\((\d+)\\,d_\{\\text\{model\}\}\)\$, the", "the ratio"
        ).group(1)
    )
    query = ComputeQuery.model_validate(example_blocks(card, "compute")[1])
    layers, hidden, _, d_attn = query.shape()
    n = query.model_params()[0]
    computed = forward_flops_per_token(n, layers, query.seq_len, d_attn)
    assert computed == pytest.approx(2 * n + attn * layers * query.seq_len * d_attn)
    # With 2N = 24 n_layer d^2 the context term over the weights is n_ctx / (6 d).
    assert attn * layers * query.seq_len * hidden / (24 * layers * hidden**2) == pytest.approx(
        query.seq_len / (ratio * hidden)
    )


# --- training-time-mfu --------------------------------------------------------------------


def test_training_time_formula_matches_the_calculator_on_the_gpt3_example() -> None:
    """T = C / (n P_peak U), and Narayanan's 8TP/(nX) lands near the same 34 days."""
    card = card_text("training-time-mfu")
    statement_of(
        card, r"T = \\frac\{C\}\{n \\cdot P_\{\\text\{peak\}\} \\cdot U\}", "T = C/(n P U)"
    )
    example = next(e for e in example_blocks(card, "compute") if e.get("preset") == "gpt3-175b")
    query = ComputeQuery.model_validate(example)
    result = compute_result(query)
    peak = peak_flops(ACCELERATORS[query.gpu], query.dtype)
    stated = result["total_flops"] / (query.gpus * peak * query.utilization)
    assert result["time_s"] == pytest.approx(stated, rel=1e-12)
    # Narayanan et al., equation (4): 8TP/(nX) with X = 140 TFLOP/s per GPU is about 34 days.
    narayanan_days = 8 * 300e9 * 175e9 / (1024 * 140e12) / 86_400
    assert result["time_days"] == pytest.approx(narayanan_days, rel=0.01)
    assert round(result["time_days"]) == 34
    assert query.utilization == pytest.approx(140 / 312, abs=5e-4)


def test_mfu_and_hfu_formulas_match_the_calculator() -> None:
    """MFU = R 6N / (n P_peak); with full recompute HFU = 4/3 MFU, and 60% HFU is 45% MFU."""
    card = card_text("training-time-mfu")
    statement_of(
        card,
        r"\\text\{MFU\} = \\frac\{R \\cdot (\d)N\}\{n\\,P_\{\\text\{peak\}\}\}",
        "the MFU formula",
    )
    ratio = statement_of(card, r"HFU \$=\\tfrac\{(\d)\}\{(\d)\}\$ MFU", "HFU = 4/3 MFU")
    hfu_over_mfu = Fraction(int(ratio.group(1)), int(ratio.group(2)))
    example = next(e for e in example_blocks(card, "compute") if e.get("preset") == "gpt3-175b")
    query = ComputeQuery.model_validate({**example, "measured_tokens_per_s": 2.0e5})
    result = compute_result(query)
    n, peak = result["params"], result["peak_flops_per_gpu"]
    mfu = utilization_from_throughput(2.0e5, 6 * n, query.gpus, peak)
    assert result["measured"]["mfu"] == pytest.approx(mfu, rel=1e-12)
    assert result["measured"]["hfu"] / result["measured"]["mfu"] == pytest.approx(
        float(hfu_over_mfu)
    )
    assert result["utilization"] / result["mfu"] == pytest.approx(float(hfu_over_mfu))
    follow_up = statement_of(card, r"(\d+)% HFU and (\d+)% MFU", "the 60% HFU / 45% MFU follow-up")
    assert int(follow_up.group(1)) / float(hfu_over_mfu) == pytest.approx(int(follow_up.group(2)))


# --- roofline -------------------------------------------------------------------------------


def _term(term: str, values: dict[str, int]) -> int:
    """A product such as '2BDF' or '2BD' in the card's notation."""
    assert re.fullmatch(r"\d*[BDF]+", term), f"unexpected term {term!r}"
    coefficient = int(re.match(r"\d*", term).group() or 1)
    product = coefficient
    for letter in re.sub(r"\d", "", term):
        product *= values[letter]
    return product


def test_roofline_matmul_intensity_matches_the_calculator() -> None:
    """I = 2BDF / (2BD + 2DF + 2BF) on the worked example's 256 x 8192 x 8192."""
    card = card_text("roofline")
    formula = statement_of(
        card, r"I = \\frac\{(\w+)\}\{(\w+) \+ (\w+) \+ (\w+)\}", "the matmul intensity"
    )
    example = example_blocks(card, "roofline")[0]
    values = {"B": example["b"], "D": example["d"], "F": example["f"]}
    numerator, *denominator = formula.groups()
    stated = _term(numerator, values) / sum(_term(t, values) for t in denominator)
    op = matmul(values["B"], values["D"], values["F"], dtype_bytes=2)
    assert op.intensity == pytest.approx(stated, rel=1e-12)
    assert stated < values["B"]  # "a little below B"


def test_roofline_dot_product_and_elementwise_intensities_match_the_calculator() -> None:
    card = card_text("roofline")
    dot = statement_of(card, r"I = \((\d)N-(\d)\)/\((\d)N\+(\d)\)", "the dot-product intensity")
    a, b, c, d = (int(g) for g in dot.groups())
    n = 4096
    assert dot_product(n, dtype_bytes=2).intensity == pytest.approx((a * n - b) / (c * n + d))
    add = statement_of(card, r"\$(\d+)N\$ bytes \(two reads, one write\): \$I = 1/(\d+)\$", "1/6")
    assert int(add.group(1)) == int(add.group(2))
    size = example_blocks(card, "roofline")[2]["n"]
    assert elementwise(size, dtype_bytes=2).intensity == pytest.approx(1 / int(add.group(2)))


# --- scaling-walls --------------------------------------------------------------------------


def test_scaling_walls_model_state_bytes_match_the_calculator() -> None:
    """(2 + 2 + K) Psi with K = 12: 16 bytes per parameter, as the memory calculator keeps."""
    card = card_text("scaling-walls")
    states = statement_of(
        card, r"\(2 \+ 2 \+ K\)\\Psi\$ bytes with \$K = (\d+)\$", "(2 + 2 + K) Psi"
    )
    k = int(states.group(1))
    per_param = int(
        statement_of(card, r"(\d+) bytes per parameter, before activations", "16 B").group(1)
    )
    assert 2 + 2 + k == per_param
    states = model_states_per_gpu(70e9, dp_degree=1, zero_stage=0)
    assert MIXED_PRECISION_ADAM.optimizer_bytes == k
    assert states.total_bytes == pytest.approx(per_param * 70e9)


# --- step-time-profile ----------------------------------------------------------------------


@pytest.mark.parametrize("ranks", [2, 4, 8, 128])
def test_step_time_ring_all_reduce_volume_matches_the_calculator(ranks: int) -> None:
    """Ring all-reduce sends 2 (p-1)/p n per rank."""
    card = card_text("step-time-profile")
    formula = statement_of(card, r"sends \$(\d)\\frac\{p-1\}\{p\}n\$ per rank", "2 (p-1)/p n")
    stated = int(formula.group(1)) * Fraction(ranks - 1, ranks)
    assert ring_factor(Collective.ALL_REDUCE, ranks) == stated
