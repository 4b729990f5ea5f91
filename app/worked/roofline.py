"""The roofline, worked: FLOPs, bytes moved, arithmetic intensity, ridge point, attainable
FLOP/s, time bounds and a matmul's critical batch, each symbolic and with the user's numbers,
and its source. The roofline calculator's page and the quiz's solutions show these rows.

Every number comes from app.calc.roofline_query's result; this module writes it out.
"""

from __future__ import annotations

from typing import Any

from app.calc.roofline_query import RooflineQuery
from app.formatting import latex_number
from app.i18n import N_, say_text

SOURCE_HTSYM = "How To Scale Your Model (Austin et al. 2025), Part 1 “All About Rooflines”"

# The words the formulas write in \text{...}, said in the reader's language (say_text).
TEXT_WORDS = (N_("bytes"), N_("peak"), N_("bandwidth"), N_("never"))


def roofline_formulas(query: RooflineQuery, r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(what, symbolic LaTeX, LaTeX with the numbers, source) for every step of the result."""
    size = r["dtype_bytes"]
    if query.op == "matmul":
        b, d, f = query.b, query.d, query.f
        flops = rf"2 \cdot {b} \cdot {d} \cdot {f}"
        traffic = rf"{size} \cdot ({b} \cdot {d} + {d} \cdot {f} + {b} \cdot {f})"
        sym_flops, sym_bytes = "2BDF", r"\text{bytes}\cdot(BD + DF + BF)"
    elif query.op == "elementwise":
        flops, traffic = f"{query.n}", rf"{size} \cdot 3 \cdot {query.n}"
        sym_flops, sym_bytes = "N", r"\text{bytes}\cdot 3N"
    else:
        flops, traffic = rf"2 \cdot {query.n} - 1", rf"{size} \cdot (2 \cdot {query.n} + 1)"
        sym_flops, sym_bytes = "2N - 1", r"\text{bytes}\cdot(2N + 1)"
    peak, bw = latex_number(r["peak_flops"]), latex_number(r["hbm_bytes_per_s"])
    rows = [
        ("FLOPs", sym_flops, rf"{flops} = {latex_number(r['flops'])}", SOURCE_HTSYM),
        (N_("Bytes moved"), sym_bytes, rf"{traffic} = {latex_number(r['bytes'])}", SOURCE_HTSYM),
        (
            N_("Arithmetic intensity"),
            r"I = \frac{\text{FLOPs}}{\text{bytes}}",
            rf"\frac{{{latex_number(r['flops'])}}}{{{latex_number(r['bytes'])}}}"
            rf" = {latex_number(r['intensity'])}",
            SOURCE_HTSYM,
        ),
        (
            N_("Ridge point"),
            r"I^* = \frac{\text{peak}}{\text{bandwidth}}",
            rf"\frac{{{peak}}}{{{bw}}} = {latex_number(r['ridge'])}",
            SOURCE_HTSYM + "; peak and bandwidth from the accelerator's datasheet",
        ),
        (
            N_("Attainable FLOP/s"),
            r"\min(\text{peak},\; I \cdot \text{bandwidth})",
            rf"\min({peak},\; {latex_number(r['intensity'])} \cdot {bw})"
            rf" = {latex_number(r['attainable_flops'])}",
            "Williams, Waterman & Patterson 2009, Roofline, CACM 52(4)",
        ),
        (
            N_("Time bounds"),
            r"\max(T_\text{math}, T_\text{mem}) \le T \le T_\text{math} + T_\text{mem}",
            rf"\max({latex_number(r['t_compute_s'])}, {latex_number(r['t_memory_s'])}) = "
            rf"{latex_number(r['time_lower_s'])}\,\text{{s}} \le T \le "
            rf"{latex_number(r['time_upper_s'])}\,\text{{s}}",
            SOURCE_HTSYM,
        ),
    ]
    if query.op == "matmul":
        crit = r["critical_batch"]
        ridge, d, f = latex_number(r["ridge"]), query.d, query.f
        rows.append(
            (
                N_("Compute-bound from"),
                r"B^* = \frac{I^* \cdot \text{bytes} \cdot DF}{2DF - I^* \cdot \text{bytes}"
                r"\cdot (D + F)} \approx \frac{I^* \cdot \text{bytes}}{2}",
                rf"\frac{{{ridge} \cdot {size} \cdot {d} \cdot {f}}}{{2 \cdot {d} \cdot {f} - "
                rf"{ridge} \cdot {size} \cdot ({d} + {f})}} = "
                + (latex_number(crit) if crit is not None else r"\text{never}")
                + rf" \approx {latex_number(r['critical_batch_approx'])}",
                SOURCE_HTSYM + " (B > 240 for bf16 on TPU v5e; 295 on H100, Question 5); "
                "exact B solved from 2BDF / (bytes (BD + DF + BF)) = I*",
            )
        )
    return [(what, say_text(sym, TEXT_WORDS), say_text(num, TEXT_WORDS), src)
            for what, sym, num, src in rows]  # fmt: skip
