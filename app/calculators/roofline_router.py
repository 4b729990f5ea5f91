"""The roofline calculator: its page, its live fragment and its JSON API."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from app.calc.hardware import ACCELERATORS, DTYPE_LABELS
from app.calc.roofline import attainable
from app.calc.roofline_query import LABELS, OPERATIONS, RooflineQuery, roofline_result
from app.calculators.pages import add_calculator_pages, share_url
from app.formatting import latex_number
from app.forms import parse_form, query_inputs
from app.i18n import N_, say_text

router = APIRouter()

PAGE = "/calculators/roofline"
SOURCE_HTSYM = "How To Scale Your Model (Austin et al. 2025), Part 1 “All About Rooflines”"


class SweepPoint(BaseModel):
    b: int
    intensity: float
    attainable_flops: float


class RidgeOut(BaseModel):
    gpu: str
    ridge: float


class RooflineResult(BaseModel):
    operation: str
    gpu: str
    dtype: str
    dtype_bytes: int
    peak_flops: float = Field(description="Dense peak FLOP/s in this precision.")
    hbm_bytes_per_s: float
    flops: float
    bytes: float = Field(description="HBM traffic: inputs read once, output written once.")
    intensity: float = Field(description="FLOPs per byte.")
    ridge: float = Field(description="peak / bandwidth, FLOPs per byte.")
    bound: str
    attainable_flops: float = Field(description="min(peak, intensity x bandwidth).")
    fraction_of_peak: float
    t_compute_s: float
    t_memory_s: float
    time_lower_s: float = Field(description="max(T_compute, T_memory): perfect overlap.")
    time_upper_s: float = Field(description="T_compute + T_memory: no overlap.")
    critical_batch: float | None = Field(description="Matmul: B where it turns compute-bound.")
    critical_batch_approx: float | None = Field(description="ridge x bytes / 2 (D, F >> B).")
    intensity_limit: float | None = Field(description="Matmul intensity as B grows without end.")
    sweep: list[SweepPoint]
    ridges: list[RidgeOut]


@router.get("/api/calc/roofline", response_model=RooflineResult, tags=["calculators"])
def roofline_api(query: Annotated[RooflineQuery, Query()]) -> RooflineResult:
    """Arithmetic intensity of a matmul, an elementwise add or a dot product, the accelerator's
    ridge point, the compute- or memory-bound verdict and the time bounds.

    Roofline: Williams, Waterman & Patterson 2009 (CACM 52(4)). Intensity, ridge point, time
    bounds max(T_math, T_comms) <= T <= T_math + T_comms and the matmul's critical batch
    (B > peak / bandwidth in bf16, e.g. 240 on TPU v5e, 295 on H100): How To Scale Your Model,
    "All About Rooflines". Peaks are dense datasheet figures.
    """
    return RooflineResult.model_validate(roofline_result(query))


def shareable_url(query: RooflineQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


# The words the formulas write in \text{...}, said in the reader's language (say_text).
TEXT_WORDS = (N_("bytes"), N_("peak"), N_("bandwidth"), N_("never"))


def _formulas(query: RooflineQuery, r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
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


def _chart(r: dict[str, Any]) -> str:
    """Log-spaced intensities spanning the operation and the ridge, and the roof over them."""
    lo = min(r["intensity"], r["ridge"]) / 100
    hi = max(r["intensity"], r["ridge"]) * 100
    steps = 60
    xs = [lo * (hi / lo) ** (i / steps) for i in range(steps + 1)]
    xs = sorted({*xs, r["intensity"], r["ridge"]})
    roof = [attainable(x, r["peak_flops"], r["hbm_bytes_per_s"]) for x in xs]
    return json.dumps(
        {
            "intensity": xs,
            "roof": roof,
            "op_intensity": r["intensity"],
            "op_flops": r["attainable_flops"],
            "ridge": r["ridge"],
            "label": r["operation"],
            "gpu": r["gpu"],
        }
    )


def _context(request: Request) -> tuple[dict[str, object], int]:
    raw = query_inputs(request)
    query, errors = parse_form(RooflineQuery, raw, LABELS)
    options = {
        "operations": list(OPERATIONS.items()),
        "gpus_list": [(k, a.name) for k, a in ACCELERATORS.items()],
        "dtypes": list(DTYPE_LABELS.items()),
    }
    if query is None:
        return {"errors": errors, "query": None, "values": raw, **options}, 422
    result = roofline_result(query)
    return {
        "errors": [],
        "query": query,
        "values": query.model_dump(),
        "r": result,
        "accelerator": ACCELERATORS[query.gpu],
        "formulas": _formulas(query, result),
        "chart_json": _chart(result),
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "roofline", _context)
