"""The inference-memory calculator: its page, the live fragment, and the JSON API."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.calc.gpus import GPUS
from app.calc.inference import KV_BYTES, UTILISATION_SOURCE, WEIGHT_BYTES
from app.calc.inference_query import LABELS, MODEL_FIELDS, InferenceQuery, inference_result
from app.calc.model import PRESETS
from app.calc.units import MEMORY_UNITS
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.results import kept_answer
from app.calculators.schemas import ModelShape
from app.formatting import memory
from app.forms import parse_form, query_inputs
from app.i18n import N_
from app.route_guards import GuardedRoute

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/inference-memory"


class InferenceTermOut(BaseModel):
    key: str
    label: str
    bytes: float = Field(description="Bytes per GPU.")
    formula: str = Field(description="LaTeX, symbolic.")
    substituted: str = Field(description="LaTeX, with this request's numbers.")
    source: str


class InferenceChart(BaseModel):
    batch: list[int]
    total_bytes: list[float]


class InferenceMemoryResult(BaseModel):
    model: ModelShape
    total_params: int
    head_dim: int
    kv_heads_per_gpu: int = Field(description="max(1, kv_heads // tp), as vLLM.")
    attention: str = Field(description="gqa (MHA/GQA/MQA by k) or mla.")
    kv_lora_rank: int | None = Field(description="MLA latent size d_c; null unless mla.")
    qk_rope_head_dim: int | None = Field(description="MLA RoPE key size d_h^R; null unless mla.")
    nominal_params: bool = Field(description="True when the weights come from `params`.")
    kv_given: bool = Field(description="True when the KV size per token was given.")
    kv_replicated: bool = Field(
        description="True when GPUs hold the same KV: kv_heads < tp, or MLA with tp > 1."
    )
    kv_bytes_per_token_model: float = Field(
        description="2·L·k·d·B for the whole model; (d_c + d_h^R)·L·B for MLA."
    )
    kv_bytes_per_token_gpu: float = Field(description="What one GPU holds per token.")
    weights_bytes: float
    kv_cache_bytes: float
    overhead_bytes: float
    total_bytes: float = Field(description="Bytes per GPU.")
    terms: list[InferenceTermOut]
    gpu: str
    gpu_memory_bytes: float
    utilisation: float
    budget_bytes: float = Field(description="utilisation × GPU memory.")
    fits: bool
    headroom_bytes: float
    largest_batch: int = Field(description="Largest batch that fits at the given context.")
    largest_context: int = Field(description="Largest context that fits at the given batch.")
    free_for_kv_bytes: float = Field(description="Budget − weights − overhead, per GPU.")
    tokens_that_fit: int = Field(description="KV cache slots that fit per GPU, all sequences.")
    chart: InferenceChart


def shareable_url(query: InferenceQuery) -> str:
    """The page's address holding every input, model fields included."""
    model = asdict(query.model())
    return share_url(
        PAGE,
        {
            name: model[name] if name in MODEL_FIELDS else getattr(query, name)
            for name in InferenceQuery.model_fields
        },
    )


def page_context(request: Request) -> tuple[dict[str, Any], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
    raw = query_inputs(request)
    query, errors = parse_form(InferenceQuery, raw, LABELS)
    options = {
        "presets": [("custom", N_("Custom")), *((k, v.name) for k, v in PRESETS.items())],
        "gpus": [(k, g.name) for k, g in GPUS.items()],
        "weight_dtypes": [(k, f"{k} ({b:g} B)") for k, b in WEIGHT_BYTES.items()],
        "kv_dtypes": [(k, f"{k} ({b:g} B)") for k, b in KV_BYTES.items()],
        "attentions": [
            ("gqa", N_("MHA / GQA / MQA (k KV heads)")),
            ("mla", N_("MLA (one latent per token)")),
        ],
        "preset_json": json.dumps(
            {k: {f: getattr(v, f) for f in MODEL_FIELDS} for k, v in PRESETS.items()}
        ),
    }
    if query is None:
        return {"errors": errors, "query": None, "values": raw, **options}, 422
    result = inference_result(query)
    values = query.model_dump()
    values.update({k: v for k, v in result["model"].items() if k in MODEL_FIELDS})
    unit = query.unit
    chart = {
        **result["chart"],
        "budget_bytes": result["budget_bytes"],
        "gpu_memory_bytes": result["gpu_memory_bytes"],
        "batch_now": query.batch,
        "unit": unit,
        "unit_bytes": MEMORY_UNITS[unit],
        "gpu": result["gpu"],
    }
    return {
        "errors": [],
        "query": query,
        "values": values,
        "r": result,
        "fmt": lambda n: memory(n, unit),
        "kv_bytes": KV_BYTES[query.kv_dtype],
        "chart_json": json.dumps(chart),
        "utilisation_source": UTILISATION_SOURCE,
        "gpu_source": GPUS[query.gpu].source,
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "inference", page_context)


@router.get(
    "/api/calc/inference-memory", response_model=InferenceMemoryResult, tags=["calculators"]
)
async def inference_api(query: Annotated[InferenceQuery, Query()]) -> Response:
    """Inference memory per GPU: weights, KV cache and overhead under tensor parallelism.

    Weights Ψ·B_w/t; KV cache 2·L·k_GPU·d·s·b·B_kv (How To Scale Your Model, inference chapter;
    Kwon et al. 2023, arXiv:2309.06180, Section 3), with k_GPU = max(1, k // t): KV heads are
    replicated when there are fewer than t, as vLLM does (ModelConfig.get_num_kv_heads). What
    fits is judged against utilisation × GPU memory (vLLM --gpu-memory-utilization, default
    0.9). int4 weights count 0.5 B each, without per-group scales.

    `attention=mla` caches (kv_lora_rank + qk_rope_head_dim)·L·B per token (DeepSeek-V2,
    arXiv:2405.04434, Table 1), whole on every TP rank as vLLM and SGLang store it. `params`
    replaces the exact count by a nominal one; `kv_bytes_per_token` replaces the shape's KV size.
    """
    return await kept_answer(
        "inference-memory", query, InferenceMemoryResult, lambda: inference_result(query)
    )
