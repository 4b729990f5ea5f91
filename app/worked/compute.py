"""Compute and training time, worked: FLOPs per token, total FLOPs, time, GPU-hours, MFU and
Megatron's per-iteration count, each symbolic and with the user's numbers, and its source. The
compute calculator's page and the quiz's solutions show these rows.

Every number comes from app.calc.compute_query's result; this module writes it out.
"""

from __future__ import annotations

from typing import Any

from app.calc.compute_query import ComputeQuery
from app.formatting import latex_number
from app.i18n import N_, say_text

# The words the formulas write in \text{...}, said in the reader's language (say_text).
TEXT_WORDS = (N_("peak"), N_("days"), N_("price"), N_("GPU-h"), N_("tokens/s"), N_("vs"))


def compute_formulas(query: ComputeQuery, r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(what, symbolic LaTeX, LaTeX with the numbers, source) for every step of the result."""
    n = latex_number(r["params"])
    k = {"training": 6, "training_recompute": 8, "inference": 2, "training_selective": 6}[r["mode"]]
    # Attention's products at the full count, 4 n_layer n_ctx d_attn per forward (flops.py's
    # one convention), times the forwards' worth the mode runs; selective adds one forward.
    a = 2 * k + (4 if r["mode"] == "training_selective" else 0)
    shape = query.shape() if query.attention_term else None
    attention_sym = rf" + {a}\,n_\text{{layer}} n_\text{{ctx}} d_\text{{attn}}" if shape else ""
    attention_num = (
        rf" + {a} \cdot {shape[0]} \cdot {query.seq_len} \cdot {shape[3]}" if shape else ""
    )
    peak = latex_number(r["peak_flops_per_gpu"])
    rows = [
        (
            N_("FLOPs per token"),
            rf"C_\text{{token}} = {k}N{attention_sym}",
            rf"{k} \cdot {n}{attention_num} = {latex_number(r['flops_per_token'])}",
            "Kaplan et al. 2020, arXiv:2001.08361, §2.1 and Table 1 (forward 2N; backward 2x "
            "forward; full recompute one more forward); attention's Q K^T and A V at the full "
            "count, 4 n_layer n_ctx d_attn per forward (Narayanan et al. 2021, Appendix; PaLM "
            "Appendix B); selective recompute reruns that forward once (Korthikanti et al. "
            "2022, Section 5)",
        ),
        (
            N_("Total FLOPs"),
            r"C = C_\text{token} \cdot D",
            rf"{latex_number(r['flops_per_token'])} \cdot {latex_number(r['tokens'])}"
            rf" = {latex_number(r['total_flops'])}",
            "Kaplan et al. 2020, §2.1: C ≈ 6ND for training",
        ),
        (
            N_("Time"),
            r"T = \frac{C}{n \cdot \text{peak} \cdot u}",
            rf"\frac{{{latex_number(r['total_flops'])}}}{{{r['gpus']} \cdot {peak} \cdot "
            rf"{r['utilization']:.4g}}} = {latex_number(r['time_s'])}\,\text{{s}}"
            rf" = {r['time_days']:,.2f}\,\text{{days}}",
            "Narayanan et al. 2021, arXiv:2104.04473, §5.1 (time = FLOPs / (n X), "
            "X = achieved FLOP/s per GPU); peak: the accelerator's dense datasheet figure",
        ),
        (
            N_("GPU-hours and cost"),
            r"n \cdot T / 3600 \cdot \text{price}",
            rf"{r['gpus']} \cdot {latex_number(r['time_s'])} / 3600 = "
            rf"{latex_number(r['gpu_hours'])}\,\text{{GPU-h}} \;\to\; "
            rf"{latex_number(r['cost'])}",
            "definition",
        ),
        (
            "MFU",
            r"\text{MFU} = u \cdot \frac{C_\text{model}}{C_\text{executed}}",
            rf"{r['utilization']:.4g} \cdot \frac{{{latex_number(r['model_flops_per_token'])}}}"
            rf"{{{latex_number(r['flops_per_token'])}}} = {r['mfu']:.4g}",
            "Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, §4.1 and Appendix B: MFU counts "
            "model FLOPs, HFU the executed ones (with recompute)",
        ),
    ]
    m = r["megatron"]
    if m:
        coef, vocab_div = (96, 16) if m["recompute"] else (72, 12)
        rows.append(
            (
                N_("Megatron, per iteration"),
                rf"F = {coef} B s l h^2 \left(1 + \frac{{s}}{{6h}} + "
                rf"\frac{{V}}{{{vocab_div} l h}}\right)",
                rf"{coef} \cdot {m['batch']} \cdot {m['seq_len']} \cdot {m['layers']} \cdot "
                rf"{m['hidden']}^2 \left(1 + \frac{{{m['seq_len']}}}{{6 \cdot {m['hidden']}}} + "
                rf"\frac{{{m['vocab']}}}{{{vocab_div} \cdot {m['layers']} \cdot {m['hidden']}}}"
                rf"\right) = {latex_number(m['flops_per_iteration'])}",
                "Narayanan et al. 2021, arXiv:2104.04473, §5.1 eq. (3) (with recompute); "
                "72 and V/(12lh) without recompute, from the same Appendix counts",
            )
        )
        rows.append(
            (
                N_("Megatron, whole run"),
                r"F \cdot \frac{D}{B s}",
                rf"{latex_number(m['flops_per_iteration'])} \cdot "
                rf"{latex_number(m['iterations'])} = {latex_number(m['total_flops'])}",
                "Narayanan et al. 2021, §5.1: I = T / (B s) iterations",
            )
        )
    att = r.get("attention")
    if att:
        rows.append(
            (
                N_("Attention, causal count"),
                r"2\,n_\text{layer} n_\text{ctx} d_\text{attn} = \tfrac12 \cdot "
                r"4\,n_\text{layer} n_\text{ctx} d_\text{attn}",
                rf"\tfrac12 \cdot {latex_number(att['forward_flops_per_token'])} = "
                rf"{latex_number(att['causal_forward_flops_per_token'])}",
                "conversion, not used above: a causal mask leaves half the score matrix; "
                "Kaplan et al. 2020 Table 1 and Megatron-Core's num_floating_point_operations "
                "(main@d98e8a64) count this half, per forward pass and token",
            )
        )
    sel = m["selective"] if m else None
    if sel:
        rows.append(
            (
                N_("Selective recompute, paper's count"),
                r"72 B s l h^2 \left(1 + \frac{s}{3h} + \frac{V}{12 l h}\right)",
                rf"{latex_number(sel['paper_flops_per_iteration'])}\;"
                rf"(+{100 * sel['paper_extra']:.2f}\%)\;\text{{vs}}\;"
                rf"{latex_number(sel['flops_per_iteration'])}\;(+{100 * sel['extra']:.2f}\%)",
                "Korthikanti et al. 2022, arXiv:2205.05198, Appendix A eq. (8): it doubles the "
                "s/(6h) term, three forwards' worth of attention's core; its text reruns one "
                "forward (4 B s^2 h per layer), which ShardLab counts",
            )
        )
    ach = r.get("achieved")
    if ach:
        rows.append(
            (
                N_("From an achieved FLOP/s per GPU"),
                r"u = \frac{X}{\text{peak}},\; n X,\; T = \frac{C}{n X}",
                rf"\frac{{{latex_number(ach['flops_per_gpu'])}}}{{{peak}}} = "
                rf"{ach['utilization']:.4g},\; {r['gpus']} \cdot "
                rf"{latex_number(ach['flops_per_gpu'])} = {latex_number(ach['aggregate_flops'])}"
                rf"\,\mathrm{{FLOP/s}},\; T = {ach['time_days']:,.2f}\,\text{{days}}",
                "Narayanan et al. 2021, arXiv:2104.04473, §5.1 (X = achieved FLOP/s per GPU; "
                "Table 1: 163 TFLOP/s per GPU on 3072 A100s, 502 PFLOP/s in all)",
            )
        )
    meas = r["measured"]
    if meas:
        rows.append(
            (
                N_("MFU from a measurement"),
                r"\text{MFU} = \frac{\text{tokens/s} \cdot C_\text{model}}{n \cdot \text{peak}}",
                rf"\frac{{{latex_number(meas['tokens_per_s'])} \cdot "
                rf"{latex_number(r['model_flops_per_token'])}}}{{{r['gpus']} \cdot {peak}}}"
                rf" = {meas['mfu']:.4g}",
                "Chowdhery et al. 2022 (PaLM), Appendix B",
            )
        )
    return [(what, say_text(sym, TEXT_WORDS), say_text(num, TEXT_WORDS), src)
            for what, sym, num, src in rows]  # fmt: skip
