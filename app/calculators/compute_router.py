"""The compute & time calculator: its page, its live fragment and its JSON API."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.calc.compute_query import LABELS, ComputeQuery, compute_result
from app.calc.flops import MODE_LABELS, SECONDS_PER_DAY, training_time_s
from app.calc.hardware import ACCELERATORS, DTYPE_LABELS
from app.calc.model import PRESETS
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.results import kept_answer
from app.forms import parse_form, query_inputs
from app.i18n import N_
from app.route_guards import GuardedRoute
from app.worked.compute import compute_formulas

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/compute"
CHART_GPUS = (1, 8, 64, 256, 1024, 4096, 16384, 65536)

# Published runs the page reproduces, each a link that fills the form.
ANCHORS = (
    (
        N_("GPT-3 175B on 300B tokens: 3.14E+23 FLOPs"),
        "Brown et al. 2020, arXiv:2005.14165, Table D.1 (6ND with N = 174.6B total)",
        {"preset": "gpt3-175b", "tokens": "300000000000"},
    ),
    (
        N_("GPT-3 175B on 1024 A100s at 140 TFLOP/s: 34 days"),
        "Narayanan et al. 2021, arXiv:2104.04473, §5.1, eq. (4): 8TP / (nX)",
        {"preset": "custom", "params": "175000000000", "tokens": "300000000000",
         "mode": "training_recompute", "gpus": "1024", "utilization": str(140 / 312)},
    ),
    (
        N_("1T-parameter GPT on 3072 A100s at 163 TFLOP/s, 450B tokens: 84 days"),
        "Narayanan et al. 2021, §5.1 and Table 1 (1008.0B parameters)",
        {"preset": "custom", "params": "1008000000000", "tokens": "450000000000",
         "mode": "training_recompute", "gpus": "3072", "utilization": str(163 / 312)},
    ),
)  # fmt: skip


class SelectiveOut(BaseModel):
    paper_flops_per_iteration: float = Field(
        description="Korthikanti et al. 2022, arXiv:2205.05198, Appendix A, eq. (8)."
    )
    flops_per_iteration: float = Field(
        description="eq. (3) without recompute + one forward of attention's core per layer."
    )
    paper_extra: float
    extra: float


class MegatronOut(BaseModel):
    selective: SelectiveOut | None = None
    recompute: bool
    batch: int
    seq_len: int
    layers: int
    hidden: int
    vocab: int
    flops_per_iteration: float = Field(description="Narayanan et al. 2021, eq. (3).")
    iterations: float
    total_flops: float


class MeasuredOut(BaseModel):
    tokens_per_s: float
    mfu: float = Field(description="tokens/s x model FLOPs per token / (GPUs x peak).")
    hfu: float = Field(description="tokens/s x executed FLOPs per token / (GPUs x peak).")
    time_s: float


class AchievedOut(BaseModel):
    flops_per_gpu: float
    utilization: float = Field(description="achieved FLOP/s per GPU / dense peak.")
    aggregate_flops: float = Field(description="achieved FLOP/s per GPU x GPUs.")
    tokens_per_s: float
    time_s: float
    time_days: float


class AttentionOut(BaseModel):
    convention: str = Field(description="'full': Q K^T and A V over the whole context.")
    forward_flops_per_token: float = Field(description="4 n_layer n_ctx d_attn, counted above.")
    causal_forward_flops_per_token: float = Field(
        description="The causal half, 2 n_layer n_ctx d_attn: a conversion, not counted above."
    )


class ComputeResult(BaseModel):
    model: str
    params: float = Field(description="N, the parameters each token multiplies by.")
    params_basis: str
    tokens: float
    mode: str
    gpu: str
    dtype: str
    peak_flops_per_gpu: float = Field(description="Dense peak FLOP/s in this precision.")
    gpus: int
    forward_flops_per_token: float
    flops_per_token: float = Field(description="Executed per token: 6N, 8N or 2N (+attention).")
    model_flops_per_token: float
    total_flops: float
    model_flops: float
    utilization: float
    mfu: float
    time_s: float
    time_days: float
    gpu_hours: float
    cost: float
    tokens_per_s: float
    megatron: MegatronOut | None
    measured: MeasuredOut | None
    achieved: AchievedOut | None
    attention: AttentionOut | None


@router.get("/api/calc/compute", response_model=ComputeResult, tags=["calculators"])
async def compute_api(query: Annotated[ComputeQuery, Query()]) -> Response:
    """Training or inference FLOPs, time, GPU-hours, cost and MFU.

    FLOPs per token after Kaplan et al. 2020 (arXiv:2001.08361, §2.1, Table 1): 2N forward,
    6N training, 8N with full recomputation, N the non-embedding parameters; attention, when
    asked for, at the full count 4 n_layer n_ctx d_attn per forward (the causal half shown as
    a conversion); from an achieved FLOP/s per GPU, utilization and aggregate throughput;
    plus Megatron's per-iteration count, Narayanan et al. 2021 (arXiv:2104.04473, §5.1,
    eq. (3)). Time = executed FLOPs / (GPUs x dense peak x utilization). MFU and HFU as in PaLM
    (arXiv:2204.02311, Appendix B).
    """
    return await kept_answer("compute", query, ComputeResult, lambda: compute_result(query))


def shareable_url(query: ComputeQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


def _chart(query: ComputeQuery, r: dict[str, Any]) -> str:
    """Days to finish as the number of GPUs grows, at the same utilization."""
    gpus = sorted({*CHART_GPUS, r["gpus"]})
    days = [
        training_time_s(r["total_flops"], g, r["peak_flops_per_gpu"], r["utilization"])
        / SECONDS_PER_DAY
        for g in gpus
    ]
    return json.dumps({"gpus": gpus, "days": days, "current": r["gpus"]})


def page_context(request: Request) -> tuple[dict[str, object], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
    raw = query_inputs(request)
    query, errors = parse_form(ComputeQuery, raw, LABELS)
    options = {
        "presets": [("custom", N_("Custom")), *((k, v.name) for k, v in PRESETS.items())],
        "gpus_list": [(k, a.name) for k, a in ACCELERATORS.items()],
        "dtypes": list(DTYPE_LABELS.items()),
        "modes": list(MODE_LABELS.items()),
        "anchors": [(t, s, f"{PAGE}?{urlencode(p)}") for t, s, p in ANCHORS],
    }
    if query is None:
        return {"errors": errors, "query": None, "values": raw, **options}, 422
    result = compute_result(query)
    return {
        "errors": [],
        "query": query,
        "values": query.model_dump(),
        "r": result,
        "accelerator": ACCELERATORS[query.gpu],
        "formulas": compute_formulas(query, result),
        "chart_json": _chart(query, result),
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "compute", page_context)
