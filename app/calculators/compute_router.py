"""The compute & time calculator: its page, its live fragment and its JSON API."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from app.calc.compute_query import LABELS, ComputeQuery, compute_result
from app.calc.flops import MODE_LABELS, SECONDS_PER_DAY, training_time_s
from app.calc.hardware import ACCELERATORS, DTYPE_LABELS
from app.calc.model import PRESETS
from app.calculators.pages import add_calculator_pages, share_url
from app.formatting import latex_number
from app.forms import parse_form, query_inputs
from app.i18n import N_, say_text

router = APIRouter()

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


class MegatronOut(BaseModel):
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


@router.get("/api/calc/compute", response_model=ComputeResult, tags=["calculators"])
def compute_api(query: Annotated[ComputeQuery, Query()]) -> ComputeResult:
    """Training or inference FLOPs, time, GPU-hours, cost and MFU.

    FLOPs per token after Kaplan et al. 2020 (arXiv:2001.08361, §2.1, Table 1): 2N forward,
    6N training, 8N with full recomputation, N the non-embedding parameters; plus Megatron's
    per-iteration count, Narayanan et al. 2021 (arXiv:2104.04473, §5.1, eq. (3)). Time =
    executed FLOPs / (GPUs x dense peak x utilization). MFU and HFU as in PaLM
    (arXiv:2204.02311, Appendix B).
    """
    return ComputeResult.model_validate(compute_result(query))


def shareable_url(query: ComputeQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


# The words the formulas write in \text{...}, said in the reader's language (say_text).
TEXT_WORDS = (N_("peak"), N_("days"), N_("price"), N_("GPU-h"), N_("tokens/s"))


def _formulas(query: ComputeQuery, r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(what, symbolic LaTeX, LaTeX with the numbers, source) for every step of the result."""
    n = latex_number(r["params"])
    k = {"training": 6, "training_recompute": 8, "inference": 2}[r["mode"]]
    shape = query.shape() if query.attention_term else None
    attention_sym = rf" + {k}\,n_\text{{layer}} n_\text{{ctx}} d_\text{{attn}}" if shape else ""
    attention_num = (
        rf" + {k} \cdot {shape[0]} \cdot {query.seq_len} \cdot {shape[3]}" if shape else ""
    )
    peak = latex_number(r["peak_flops_per_gpu"])
    rows = [
        (
            N_("FLOPs per token"),
            rf"C_\text{{token}} = {k}N{attention_sym}",
            rf"{k} \cdot {n}{attention_num} = {latex_number(r['flops_per_token'])}",
            "Kaplan et al. 2020, arXiv:2001.08361, §2.1 and Table 1 (forward 2N + "
            "2 n_layer n_ctx d_attn; backward 2x forward; full recompute one more forward)",
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


def _chart(query: ComputeQuery, r: dict[str, Any]) -> str:
    """Days to finish as the number of GPUs grows, at the same utilization."""
    gpus = sorted({*CHART_GPUS, r["gpus"]})
    days = [
        training_time_s(r["total_flops"], g, r["peak_flops_per_gpu"], r["utilization"])
        / SECONDS_PER_DAY
        for g in gpus
    ]
    return json.dumps({"gpus": gpus, "days": days, "current": r["gpus"]})


def _context(request: Request) -> tuple[dict[str, object], int]:
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
        "formulas": _formulas(query, result),
        "chart_json": _chart(query, result),
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "compute", _context)
