"""The roofline calculator: its page, its live fragment and its JSON API."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.calc.hardware import ACCELERATORS, DTYPE_LABELS
from app.calc.roofline import attainable
from app.calc.roofline_query import LABELS, OPERATIONS, RooflineQuery, roofline_result
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.results import kept_answer
from app.forms import parse_form, query_inputs
from app.route_guards import GuardedRoute
from app.worked.roofline import roofline_formulas

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/roofline"


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
async def roofline_api(query: Annotated[RooflineQuery, Query()]) -> Response:
    """Arithmetic intensity of a matmul, an elementwise add or a dot product, the accelerator's
    ridge point, the compute- or memory-bound verdict and the time bounds.

    Roofline: Williams, Waterman & Patterson 2009 (CACM 52(4)). Intensity, ridge point, time
    bounds max(T_math, T_comms) <= T <= T_math + T_comms and the matmul's critical batch
    (B > peak / bandwidth in bf16, e.g. 240 on TPU v5e, 295 on H100): How To Scale Your Model,
    "All About Rooflines". Peaks are dense datasheet figures.
    """
    return await kept_answer("roofline", query, RooflineResult, lambda: roofline_result(query))


def shareable_url(query: RooflineQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


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


def page_context(request: Request) -> tuple[dict[str, object], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
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
        "formulas": roofline_formulas(query, result),
        "chart_json": _chart(result),
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "roofline", page_context)
