"""Formulas the parallelism cards state in prose agree with the calculators (batch: parallelism).

Each test reads a formula out of the card's text with a regular expression, so editing the
card's formula breaks the test, and evaluates it on the card's worked-example inputs against the
calculator that renders that example (the pattern of tests/cards/test_card_formulas.py).
"""

from __future__ import annotations

import math
import re

import pytest

from app.calc.activations import ActivationSetup, layer_activations
from app.calc.bandwidth import busbw_bytes_per_s
from app.calc.comm import Collective, ring_bytes_per_rank, ring_factor
from app.calc.comm_volume import (
    CommLayout,
    cp_layer_elements,
    ep_layer_elements,
    kv_width,
    latency_steps,
    pp_elements,
    stage_params,
    step_calls,
    tp_layer_elements,
)
from app.calc.communication_query import CommunicationQuery, communication_result
from app.calc.links import LINKS, alpha_beta_time
from app.calc.memory import MIXED_PRECISION_ADAM, model_states_per_gpu
from app.calc.model import PRESETS, ModelConfig, count_params
from app.calc.pipeline import PipelineSetup, closed_form, simulate
from tests.cards.card_text import card_text, example_blocks

# Multi-letter symbols the cards use, and the Python names they become.
SYMBOLS = {
    r"L_s": "Ls",
    r"n_{tok}": "ntok",
    r"n_{\text{tok}}": "ntok",
    r"d_{kv}": "dkv",
    r"N_d": "Nd",
    r"T_F": "TF",
    r"T_B": "TB",
    r"T_W": "TW",
}


def to_python(latex: str) -> str:
    r"""Plain LaTeX arithmetic as the cards write it (\frac, \cdot, implicit products) in Python."""
    text = latex
    for symbol, name in SYMBOLS.items():
        text = text.replace(symbol, name)
    text = text.replace(r"\cdot", "*").replace(r"\,", " ").replace(r"\;", " ")
    while r"\frac" in text:  # innermost first: \frac{a}{b} with no braces inside
        text, n = re.subn(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", text)
        assert n, f"cannot read the fraction in {latex!r}"
    if re.search(r"[\\{}]", text):
        raise ValueError(f"unexpected notation in the card: {latex!r}")
    names = sorted(SYMBOLS.values(), key=len, reverse=True)
    token = re.compile(r"\d+(?:\.\d+)?|" + "|".join(names) + r"|[A-Za-z]|[-+*/()]|\s+")
    tokens = [t for t in token.findall(text) if not t.isspace()]
    assert "".join(tokens) == re.sub(r"\s+", "", text), f"unreadable formula {latex!r}"
    out: list[str] = []
    for tok in tokens:  # an implicit product: 2m, bsh, 5as, (p-1)(q), sbh(...)
        if out and (out[-1][-1].isalnum() or out[-1] == ")") and (tok[0].isalnum() or tok == "("):
            out.append("*")
        out.append(tok)
    return "".join(out)


def evaluate(latex: str, **values: float) -> float:
    return eval(to_python(latex), {"__builtins__": {}}, values)  # noqa: S307 - charset checked


def test_the_latex_reader_reads_the_cards_notation() -> None:
    assert to_python(r"4 L_s m \cdot 2\frac{t-1}{t}bsh") == "4*Ls*m*2*((t-1)/(t))*b*s*h"
    assert to_python(r"sbh(10 + 24/t + 5as/(ht))") == "s*b*h*(10+24/t+5*a*s/(h*t))"
    assert evaluate(r"(p-1)(T_F + T_B - T_W)", p=4, TF=1, TB=1, TW=1) == 3


# --- pipeline-bubble ---------------------------------------------------------------------------


def _bubble_formulas() -> tuple[str, str, str]:
    text = card_text("pipeline-bubble")
    ideal = re.search(r"\\frac\{t_\{pb\}\}\{t_\{\\text\{ideal\}\}\} = (\\frac\{[^{}]*\}\{[^{}]*\})",
                      text)  # fmt: skip
    step = re.search(r"\\frac\{t_\{pb\}\}\{t_\{\\text\{step\}\}\} = (\\frac\{[^{}]*\}\{[^{}]*\})",
                     text)  # fmt: skip
    interleaved = re.search(r"a bubble of \$(\([^$]*\)/\([^$]*\))\$", text)
    assert ideal and step and interleaved, "the pipeline-bubble card's bubble formulas are gone"
    return ideal.group(1), step.group(1), interleaved.group(1)


@pytest.mark.parametrize("example", example_blocks(card_text("pipeline-bubble"), "pipeline"))
def test_pipeline_bubble_ratios_match_the_simulation(example: dict) -> None:
    ideal, step, interleaved = _bubble_formulas()
    p, m = example["pp"], example["microbatches"]
    v = example.get("virtual_stages", 1)
    setup = PipelineSetup(example["schedule"], p, m, chunks=v)  # t_p2p = 0: the closed form
    sim = simulate(setup)
    stated = evaluate(interleaved if v > 1 else ideal, p=p, m=m, v=v)
    assert sim.bubble_over_ideal == pytest.approx(stated, rel=1e-9)
    assert closed_form(setup).over_ideal == pytest.approx(stated, rel=1e-9)
    if v == 1:  # GPipe's ratio: the idle share of the whole step
        assert sim.bubble_fraction_of_total == pytest.approx(evaluate(step, p=p, m=m), rel=1e-9)
        gpipe = simulate(PipelineSetup("gpipe", p, m))
        assert gpipe.bubble_over_ideal == pytest.approx(stated, rel=1e-9)  # "same bubble"
    if example.get("t_p2p"):  # "the gain is smaller than the closed form says"
        with_p2p = simulate(PipelineSetup(example["schedule"], p, m, chunks=v,
                                          t_p2p=example["t_p2p"]))  # fmt: skip
        assert with_p2p.bubble_over_ideal > stated


# --- zero-bubble-schedules ---------------------------------------------------------------------


def test_zb_h1_bubble_formula_matches_the_simulation_on_the_worked_examples() -> None:
    text = card_text("zero-bubble-schedules")
    zb = re.search(r"The bubble becomes \$(\(p-1\)\([^$]*\))\$", text)
    one_f_one_b = re.search(r"1F1B's bubble is \$(\(p-1\)\([^$]*\))\$", text)
    assert zb and one_f_one_b, "the zero-bubble card's bubble formulas are gone"
    for example in example_blocks(text, "pipeline"):
        p, m = example["pp"], example["microbatches"]
        times = {"TF": example.get("t_f", 1.0), "TB": example.get("t_b", 1.0),
                 "TW": example.get("t_w", 1.0)}  # fmt: skip
        setup = PipelineSetup("zb-h1", p, m, t_f=times["TF"], t_b=times["TB"], t_w=times["TW"])
        stated = evaluate(zb.group(1), p=p, **times)
        form = closed_form(setup)
        assert form.exact
        assert form.bubble_time == pytest.approx(stated, rel=1e-12)
        sim = simulate(setup)
        assert sim.idle_time / p == pytest.approx(stated, rel=1e-9)
        baseline = simulate(replace_schedule(setup, "1f1b"))
        assert baseline.idle_time / p == pytest.approx(
            evaluate(one_f_one_b.group(1), p=p, **times), rel=1e-9)  # fmt: skip
    # "about a third of 1F1B's when T_F = T_B = T_W"
    assert evaluate(zb.group(1), p=4, TF=1, TB=1, TW=1) * 3 == evaluate(
        one_f_one_b.group(1), p=4, TF=1, TB=1, TW=1)  # fmt: skip


def replace_schedule(setup: PipelineSetup, schedule: str) -> PipelineSetup:
    return PipelineSetup(schedule, setup.stages, setup.microbatches, t_f=setup.t_f,
                         t_b=setup.t_b, t_w=setup.t_w)  # fmt: skip


# --- tensor-parallel and sequence-parallel -----------------------------------------------------


def _query(example: dict) -> CommunicationQuery:
    return CommunicationQuery.model_validate(example)


def _elements(layout: CommLayout, strategy: str) -> float:
    return sum(c.elements_per_step for c in step_calls(layout) if c.strategy == strategy)


def test_tp_volume_formula_matches_the_calculator_on_the_worked_example() -> None:
    text = card_text("tensor-parallel")
    formula = re.search(r"V_\{TP\} = (.*?)\\ \\text\{elements per layer per micro-batch\}",
                        text, flags=re.DOTALL)  # fmt: skip
    assert formula, "the tensor-parallel card's V_TP formula is gone"
    example = example_blocks(text, "communication")[0]
    layout = _query(example).layout()
    b, s, h, t = layout.micro_batch, layout.seq_len, layout.model.hidden, layout.tp
    per_layer = evaluate(formula.group(1), b=b, s=s, h=h, t=t)
    assert per_layer == pytest.approx(tp_layer_elements(b, s, h, t), rel=1e-12)
    assert _elements(layout, "tp") == pytest.approx(
        per_layer * layout.layers_in_stage * layout.microbatches, rel=1e-12)  # fmt: skip
    # "which tends to 8bsh for large t"
    assert per_layer / (b * s * h) < 8 < evaluate(formula.group(1), b=1, s=1, h=1, t=10**9) + 1e-6


def test_sequence_parallel_keeps_tps_volume() -> None:
    text = card_text("sequence-parallel")
    total = re.search(r"so the total is \$(.*?)bsh\$, exactly TP's", text)
    assert total, "the sequence-parallel card's volume statement is gone"
    example = example_blocks(text, "communication")[0]
    with_sp = _query(example).layout()
    without = _query({**example, "sequence_parallel": False}).layout()
    layers_m = with_sp.layers_in_stage * with_sp.microbatches
    bsh = with_sp.micro_batch * with_sp.seq_len * with_sp.model.hidden
    stated = evaluate(total.group(1), t=with_sp.tp) * bsh * layers_m
    assert _elements(with_sp, "tp") == pytest.approx(stated, rel=1e-12)
    assert _elements(without, "tp") == pytest.approx(stated, rel=1e-12)


# Korthikanti et al.'s setting (their Table 3): GPT-3 175B, MHA, GeLU MLP of 4h, dropout.
GPT3 = ModelConfig(layers=96, hidden=12288, heads=96, kv_heads=96, ffn_hidden=4 * 12288,
                   vocab=51200, ffn_type="gelu", norm="layernorm", name="GPT-3 175B")  # fmt: skip


def test_sequence_parallel_activation_formulas_match_the_activation_calculator() -> None:
    text = card_text("sequence-parallel")
    move = re.search(r"goes from \$(sbh\([^$]*\))\$ to \$(sbh\([^$]*\))\$", text)
    whole = re.search(r"a GPT layer saves for the backward pass: \$(sbh\([^$]*\))\$ bytes", text)
    assert move and whole, "the sequence-parallel card's activation formulas are gone"
    s, b, h, a = 2048, 1, GPT3.hidden, GPT3.heads
    for t in (1, 2, 8):
        tp_only = layer_activations(GPT3, ActivationSetup(seq_len=s, micro_batch=b, tp=t))
        tp_sp = layer_activations(GPT3, ActivationSetup(seq_len=s, micro_batch=b, tp=t, sp=True))
        values = {"s": s, "b": b, "h": h, "a": a, "t": t}
        assert tp_only.total == pytest.approx(evaluate(move.group(1), **values), rel=1e-12)
        assert tp_sp.total == pytest.approx(evaluate(move.group(2), **values), rel=1e-12)
    alone = layer_activations(GPT3, ActivationSetup(seq_len=s, micro_batch=b))
    assert alone.total == pytest.approx(evaluate(whole.group(1), s=s, b=b, h=h, a=a), rel=1e-12)


# --- context-parallel and expert-parallel ------------------------------------------------------


def test_cp_ring_volume_matches_the_calculator_on_the_worked_example() -> None:
    text = card_text("context-parallel")
    passes = re.search(r"Per layer per micro-batch that is (\w+) ring passes of \$\(c-1\)\$ blocks "
                       r"of size \$(.*?)\$", text)  # fmt: skip
    assert passes, "the context-parallel card's ring-pass formula is gone"
    count = {"two": 2, "three": 3, "four": 4}[passes.group(1)]
    example = example_blocks(text, "communication")[0]
    layout = _query(example).layout()
    c, b, s = layout.cp, layout.micro_batch, layout.seq_len
    block = evaluate(passes.group(2).replace(r"\frac{s}{c}", "(s/c)"), b=b, s=s, c=c,
                     dkv=kv_width(layout))  # fmt: skip
    per_layer = count * (c - 1) * block
    assert per_layer == pytest.approx(cp_layer_elements(b, s // c, kv_width(layout), c), rel=1e-12)
    assert _elements(layout, "cp") == pytest.approx(
        per_layer * layout.layers_in_stage * layout.microbatches, rel=1e-12)  # fmt: skip
    # "each rank exchanges a single head's K and V per token"
    assert kv_width(layout) == layout.model.dim_per_head


def test_ep_all_to_all_volume_matches_the_calculator_on_the_worked_example() -> None:
    text = card_text("expert-parallel")
    stated = re.search(r"each GPU sends about \$(.*?)\$ values in each of the (\w+) all-to-alls, "
                       r"of which \$(\\frac\{e-1\}\{e\})\$ leave", text)  # fmt: skip
    assert stated, "the expert-parallel card's all-to-all volume is gone"
    count = {"two": 2, "four": 4}[stated.group(2)]
    example = example_blocks(text, "communication")[0]
    layout = _query(example).layout()
    cfg, e = layout.model, layout.ep
    ntok = layout.micro_batch * layout.seq_len  # tp 1, no SP split
    values = {"k": cfg.top_k, "ntok": ntok, "h": cfg.hidden, "e": e}
    per_layer = count * evaluate(stated.group(1), **values) * evaluate(stated.group(3), **values)
    assert per_layer == pytest.approx(ep_layer_elements(cfg.top_k, ntok, cfg.hidden, e), rel=1e-12)
    assert _elements(layout, "ep") == pytest.approx(
        per_layer * layout.layers_in_stage * layout.microbatches, rel=1e-12)  # fmt: skip


# --- comm-volume-per-layer: the TP, PP, EP and CP rows -----------------------------------------


def _row(text: str, strategy: str) -> str:
    row = re.search(
        rf"^\| {re.escape(strategy)} \|[^|]*\| \$([^$]*)\$ \|", text, flags=re.MULTILINE
    )
    assert row, f"no {strategy} row with a formula in comm-volume-per-layer"
    return row.group(1)


def _values(layout: CommLayout) -> dict[str, float]:
    return {"Ls": layout.layers_in_stage, "m": layout.microbatches, "b": layout.micro_batch,
            "s": layout.seq_len, "h": layout.model.hidden, "t": layout.tp, "e": layout.ep,
            "c": layout.cp, "k": layout.model.top_k, "dkv": kv_width(layout)}  # fmt: skip


def test_comm_card_tp_and_pp_rows_match_the_default_layout() -> None:
    text = card_text("comm-volume-per-layer")
    layout = _query(example_blocks(text, "communication")[0]).layout()  # SP on, as the default is
    values = _values(layout)
    assert _elements(layout, "tp") == pytest.approx(evaluate(_row(text, "TP"), **values), rel=1e-12)
    assert _elements(layout, "pp") == pytest.approx(evaluate(_row(text, "PP"), **values), rel=1e-12)
    assert evaluate(_row(text, "PP"), **values) == pytest.approx(
        pp_elements(layout.micro_batch, layout.seq_len, layout.model.hidden,
                    layout.microbatches, layout.tp), rel=1e-12)  # fmt: skip


def test_comm_card_ep_and_cp_rows_match_those_cards_worked_examples() -> None:
    text = card_text("comm-volume-per-layer")
    ep_layout = _query(example_blocks(card_text("expert-parallel"), "communication")[0]).layout()
    values = _values(ep_layout) | {"ntok": ep_layout.micro_batch * ep_layout.seq_len}
    assert _elements(ep_layout, "ep") == pytest.approx(evaluate(_row(text, "EP"), **values),
                                                       rel=1e-12)  # fmt: skip
    cp_layout = _query(example_blocks(card_text("context-parallel"), "communication")[0]).layout()
    assert _elements(cp_layout, "cp") == pytest.approx(
        evaluate(_row(text, "CP"), **_values(cp_layout)), rel=1e-12)  # fmt: skip


def test_comm_card_dp_per_layer_count() -> None:
    text = card_text("comm-volume-per-layer")
    stated = re.search(
        r"about \$(\d+)h\^2\$ parameters \(\$(\d+)h\^2\$ attention, \$(\d+)h\^2\$ MLP\), "
        r"so DDP moves about \$2 \\cdot \1h\^2 = (\d+)h\^2\$",
        text,
    )
    assert stated, "the DP-per-layer note is gone"
    per_layer, attention, mlp, moved = (int(g) for g in stated.groups())
    h = 4096
    gpt = ModelConfig(layers=1, hidden=h, heads=32, kv_heads=32, ffn_hidden=4 * h, vocab=1,
                      ffn_type="gelu", norm="layernorm")  # fmt: skip
    counts = count_params(gpt)
    assert counts.attention == attention * h * h and counts.mlp == mlp * h * h
    assert attention + mlp == per_layer and moved == 2 * per_layer


# --- ring-all-reduce ---------------------------------------------------------------------------


def test_ring_cost_model_matches_the_alpha_beta_calculator() -> None:
    text = card_text("ring-all-reduce")
    model = re.search(r"T_\{\\text\{ring\}\} \\approx (.*?)\\;\+\\; (.*?)\n", text)
    assert model, "the ring-all-reduce card's cost model is gone"
    latency = model.group(1).replace(r"\alpha", "alpha")
    bandwidth = model.group(2).replace(r"\frac{S}{B}", "(S/B)")
    psi = count_params(PRESETS["llama3-8b"]).total
    for example in example_blocks(text, "communication"):
        n = example["dp"]
        link = LINKS[example.get("dp_link", "ib-ndr")]
        size = 2 * psi  # bf16 gradients, bytes
        stated = (evaluate(latency.replace("alpha", "a"), N=n, a=link.latency_s)
                  + evaluate(bandwidth, N=n, S=size, B=link.bandwidth_bytes_per_s))  # fmt: skip
        sent = ring_bytes_per_rank(Collective.ALL_REDUCE, int(size), n)
        computed = alpha_beta_time(sent, latency_steps(Collective.ALL_REDUCE, n), link)
        assert computed == pytest.approx(stated, rel=1e-9)
        result = communication_result(_query(example))
        assert result["comm_s"] == pytest.approx(stated, rel=1e-9)


def test_busbw_factors_match_the_bandwidth_calculator() -> None:
    text = card_text("ring-all-reduce")
    line = re.search(r"\*\*busbw\*\* \$=\$ algbw \$\\times\\, (.*?)\$ for all-reduce\. For "
                     r"reduce-scatter and all-gather alone the factor is \$(.*?)\$, and for "
                     r"broadcast it is (\d+)\.", text)  # fmt: skip
    assert line, "the ring-all-reduce card's busbw factors are gone"
    size, seconds = 10**9, 0.25
    for n in (2, 8, 64):
        algbw = size / seconds
        for kind, latex in ((Collective.ALL_REDUCE, line.group(1)),
                            (Collective.REDUCE_SCATTER, line.group(2)),
                            (Collective.ALL_GATHER, line.group(2)),
                            (Collective.BROADCAST, line.group(3))):  # fmt: skip
            factor = evaluate(latex, N=n)
            assert busbw_bytes_per_s(kind, size, n, seconds) == pytest.approx(algbw * factor)
            assert float(ring_factor(kind, n)) == pytest.approx(factor)


# --- compute-comm-overlap ----------------------------------------------------------------------


def test_overlap_bounds_match_the_communication_calculator() -> None:
    text = card_text("compute-comm-overlap")
    bounds = re.search(r"\$\$\\max\(T_c, T_m\) \\;\\le\\; T_\{\\text\{step\}\} \\;\\le\\; "
                       r"T_c \+ T_m\$\$", text)  # fmt: skip
    assert bounds, "the compute-comm-overlap card's bounds are gone"
    for example in example_blocks(text, "communication"):
        result = communication_result(_query(example))
        t_c, t_m = result["compute_s"], result["comm_s"]
        assert result["step_s_perfect_overlap"] == max(t_c, t_m)
        assert result["step_s_no_overlap"] == pytest.approx(t_c + t_m)
        # "never more than a factor of 2 apart"
        assert result["step_s_no_overlap"] <= 2 * result["step_s_perfect_overlap"]


# --- choosing-a-parallel-layout and 3d-parallelism ---------------------------------------------


def test_model_state_bytes_per_parameter_match_the_memory_calculator() -> None:
    text = card_text("choosing-a-parallel-layout")
    stated = re.search(r"about \$(\d+)\\Psi/\(t\\,p\)\$ bytes with mixed-precision Adam and no "
                       r"ZeRO \((\d+) \+ (\d+) \+ (\d+) bytes per parameter", text)  # fmt: skip
    assert stated, "the layout card's model-state line is gone"
    total, weights, grads, optimizer = (int(g) for g in stated.groups())
    recipe = MIXED_PRECISION_ADAM
    assert (recipe.weight_bytes, recipe.grad_bytes, recipe.optimizer_bytes) == (
        weights, grads, optimizer)  # fmt: skip
    assert weights + grads + optimizer == total
    psi, t, p, d = 70e9, 8, 2, 4  # the worked example's layout
    local = psi / (t * p)
    assert model_states_per_gpu(local, d, 0).total_bytes == pytest.approx(total * psi / (t * p))
    # ZeRO-1 divides the optimizer bytes by d, ZeRO-2 the gradients too, ZeRO-3 everything.
    assert model_states_per_gpu(local, d, 1).total_bytes == pytest.approx(
        (weights + grads + optimizer / d) * local)  # fmt: skip
    assert model_states_per_gpu(local, d, 2).total_bytes == pytest.approx(
        (weights + (grads + optimizer) / d) * local)  # fmt: skip
    assert model_states_per_gpu(local, d, 3).total_bytes == pytest.approx(total * local / d)


def test_3d_dp_traffic_is_about_twice_the_gpus_parameter_share() -> None:
    text = card_text("3d-parallelism")
    assert re.search(r"\*\*DP\*\* moves parameters, \$\\approx 2\\Psi/\(t p\)\$ per GPU per step",
                     text), "the 3D card's DP volume is gone"  # fmt: skip
    example = example_blocks(text, "communication")[0]
    layout = _query(example).layout()
    dense, expert = stage_params(layout)
    assert expert == 0
    n_d = layout.dp * layout.cp
    psi = count_params(layout.model).total
    dp = _elements(layout, "dp")
    assert dp == pytest.approx(2 * (n_d - 1) / n_d * dense, rel=1e-12)  # exact: this stage's Ψ
    # "≈": the first stage also holds the embedding, and the ring factor is (N_d−1)/N_d.
    assert dp == pytest.approx(2 * psi / (layout.tp * layout.pp), rel=0.3)
    assert math.isclose(dense * layout.tp * layout.pp / psi, 1, rel_tol=0.1)
