"""The layout planner: its page, its live fragment and its JSON API (GET and POST)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.calc.links import LINKS
from app.calc.model import PRESETS
from app.calc.planner import PIPELINE_SCHEDULES, RECOMPUTE
from app.calc.planner_answer import planner_result
from app.calc.planner_fields import GPU_TYPES, LABELS, LAYOUT_FIELDS, RUN_FIELDS, RUN_PRESETS
from app.calc.planner_query import PlannerInputs, PlannerQuery
from app.calc.precision import OPTIMIZERS, RECIPES
from app.calc.profiles import DEFAULT, built_in
from app.calc.training_query import MODEL_FIELDS
from app.calculators.calibration_view import (
    EXAMPLE_CSV,
    MAX_CROSS_VALIDATED_RUNS,
    MAX_RUNS,
    MAX_TEXT_BYTES,
    MIN_CROSS_VALIDATED_RUNS,
    profile_choices,
    profile_title,
    short_title,
)
from app.calculators.communication_view import seconds
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.planner_view import planner_view
from app.calculators.results import kept_answer
from app.formatting import memory
from app.forms import parse_form, query_inputs
from app.heavy_work import heavy_work_unless
from app.i18n import N_
from app.route_guards import GuardedRoute

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/planner"


class LayoutOut(BaseModel):
    dp: int
    tp: int
    pp: int
    cp: int
    ep: int
    zero_stage: int
    distributed_optimizer: bool
    recompute: str
    micro_batch: int
    schedule: str
    virtual_stages: int
    sequence_parallel: bool
    gpus: int
    description: str


class CostOut(BaseModel):
    layout: LayoutOut
    microbatches: int = Field(description="m: micro-batches per step per pipeline")
    memory_bytes: float = Field(
        description="per GPU at the stage where it peaks, as the allocator reserves it"
    )
    model_states_bytes: float
    activation_bytes: float
    other_bytes: float = Field(description="buffers, CUDA context and NCCL's buffers")
    loss_bytes: float = Field(description="the loss's temporaries beyond an fp32 logits copy")
    allocator_bytes: float = Field(description="reserved by the caching allocator, not handed out")
    fits: bool
    headroom_bytes: float
    step_time_s: float
    step: dict[str, float] = Field(description="seconds per step, term by term")
    mfu: float
    hfu: float
    tokens_per_s: float
    days: float = Field(description="for the token budget")
    placement: dict[str, str] = Field(description="intra-node or inter-node, per group")
    pareto: bool = Field(description="on the Pareto front of step time and memory")


class RejectedOut(BaseModel):
    layout: LayoutOut
    reason: str


class RejectionGroupOut(BaseModel):
    rule: str
    description: str
    count: int
    examples: list[RejectedOut]


class BrokenRuleOut(BaseModel):
    rule: str
    description: str
    reason: str


class WhyNotOut(BaseModel):
    layout: LayoutOut
    valid: bool
    broken: list[BrokenRuleOut]
    fits: bool | None
    slowdown: float | None = Field(description="step time / the best layout's")
    blame: str | None = Field(description="the step term (or memory) most to blame")
    blame_s: float
    explanation: str


class ClusterOut(BaseModel):
    gpu: str
    gpu_name: str
    gpu_memory_bytes: float
    gpus_per_node: int
    nodes: int
    gpus: int
    intra_node: str
    inter_node: str


class PublishedOut(BaseModel):
    slug: str
    title: str
    source: str = Field(description="paper, table or section")
    layout: LayoutOut = Field(description="the published layout")
    metric: str = Field(description="'TFLOP/s per GPU', 'MFU' or 'tokens/s per GPU'")
    published: float = Field(description="the published figure, in the metric's raw unit")
    predicted: float | None = Field(description="the planner's, for the published layout")
    ratio: float | None = Field(description="predicted / published")
    band: list[float] = Field(description="the [low, high] the ratio is held to")
    in_band: bool | None
    gap: str = Field(description="why the planner differs from the published figure")
    broken: str | None = Field(description="the rule the published layout breaks here")
    strict_rule: str | None = Field(description="the rule it breaks with equal stages")
    strict_rule_description: str | None
    fits: bool | None
    rank: int | None = Field(description="by step time among the feasible; None: unlisted")
    listed: int
    feasible: int
    slowdown: float | None = Field(description="step time / the best layout's")


class ProfileOut(BaseModel):
    name: str
    source: str
    values: dict[str, float] = Field(description="every named parameter (app.calc.performance)")
    gemm_flops: float | None
    hbm_bytes_per_s: float | None


class PlannerResult(BaseModel):
    model: str
    total_params: int
    active_params: int
    cluster: ClusterOut
    global_batch_tokens: int
    global_batch_sequences: int
    seq_len: int
    token_budget: float
    matmul_efficiency: float
    profile: ProfileOut = Field(description="the performance profile the step times come from")
    enumerated: int
    valid: int
    feasible: int
    ranked: list[CostOut]
    pareto: list[CostOut]
    rejected: list[RejectionGroupOut]
    chosen: CostOut | None = Field(description="the named layout if valid, else the best")
    chosen_is_best: bool
    why_not: WhyNotOut | None
    published: PublishedOut | None = Field(description="the published run the query names")
    step_terms: list[str]


def shareable_url(query: PlannerQuery) -> str:
    """The page's address holding every input that is set, in the schema's order (with a
    published run, what the run fixes is left out: the run gives it)."""
    return _address(query.model_dump(), query.run)


def _address(values: dict[str, object], run: str | None) -> str:
    if run:
        values = {k: v for k, v in values.items() if k not in RUN_FIELDS}
    return share_url(PAGE, values)


def layout_urls(query: PlannerQuery) -> Callable[[dict[str, object]], str]:
    """The page's address choosing a layout (a result's layout data), for each of the fifty-odd
    rows of the page: the query's inputs are read once, not once a row (a third of the page's
    rendering when they were)."""
    values = query.model_dump()
    return lambda layout: _address({**values, **{k: layout[k] for k in LAYOUT_FIELDS}}, query.run)


def _options() -> dict[str, object]:
    return {
        "presets": [("custom", N_("Custom")), *((k, v.name) for k, v in PRESETS.items())],
        "preset_json": json.dumps(
            {k: {f: getattr(v, f) for f in MODEL_FIELDS} for k, v in PRESETS.items()}
        ),
        "gpu_types": [(k, g.name) for k, g in GPU_TYPES.items()],
        "links": [(k, link.name) for k, link in LINKS.items()],
        "recipes": list(RECIPES.items()),
        "optimizers": list(OPTIMIZERS.items()),
        "schedules": [(s, s) for s in PIPELINE_SCHEDULES],
        "recomputes": [(r, r) for r in RECOMPUTE],
        "runs": [
            (slug, label, source, share_url(PAGE, values))
            for slug, (label, source, values) in RUN_PRESETS.items()
        ],
        "profiles": [
            (value, name, title, short_title(title)) for value, name, title in profile_choices()
        ],
        "runs_header": EXAMPLE_CSV.split("\n", 1)[0],
        "limits": {
            "runs": MAX_RUNS,
            "kb": MAX_TEXT_BYTES // 1000,
            "least": MIN_CROSS_VALIDATED_RUNS,
            "most": MAX_CROSS_VALIDATED_RUNS,
        },  # fmt: skip
        "fmt": {"seconds": seconds, "memory": memory},
    }


def _profile_choice(profile: str | None) -> dict[str, object]:
    """How the form and the result name the query's profile: the select's value, the query's
    own profile (JSON, or a name that is not built in) where it is none of the built-in ones,
    and a built-in one's title."""
    name = (profile or "").strip() or DEFAULT
    if name in built_in():
        value = "" if name == DEFAULT else name
        return {
            "profile_value": value,
            "custom_profile": None,
            "profile_title": profile_title(name),
        }
    return {"profile_value": profile, "custom_profile": profile, "profile_title": None}


def planner_context(request: Request) -> tuple[dict[str, object], int]:
    """The planner page's (or fragment's) context for the request's inputs, and its status."""
    raw = query_inputs(request)
    query, errors = parse_form(PlannerQuery, raw, LABELS)
    if query is None:
        defaults = PlannerQuery.model_construct().model_dump()
        choice = _profile_choice(raw.get("profile"))
        return {"errors": errors, "query": None, "values": {**defaults, **raw}, **choice,
                **_options()}, 422  # fmt: skip
    view = planner_view(query)
    values = query.model_dump()
    model = query.model()
    values.update({k: getattr(model, k) for k in MODEL_FIELDS})
    chosen = view.result["chosen"]
    return {
        "errors": [],
        "query": query,
        "values": values,
        "view": view,
        "r": view.result,
        "picked": chosen["layout"] if chosen else None,
        "layout_url": layout_urls(query),
        "share_url": shareable_url(query),
        **_profile_choice(query.profile),
        **_options(),
    }, 200


def searched(inputs: PlannerInputs, where: str) -> PlannerResult:
    """The planner's answer, or a 422 like the one FastAPI gives for a field (loc: `where`)
    for inputs the planner's own checks refuse. Called in the route's thread, as it searches."""
    problem = inputs.search_problems()
    if problem is not None:
        error = {"type": "value_error", "loc": (where,), "msg": f"Value error, {problem}",
                 "input": inputs.model_dump(exclude_unset=True)}  # fmt: skip
        raise RequestValidationError([error])
    return PlannerResult.model_validate(planner_result(inputs))


# A search holds one of the few heavy-work slots (app/heavy_work.py), taken on the event loop
# before the route's thread starts; a query whose plan is cached computes next to nothing and
# takes none. (Should the plan leave the cache between the check and the route, that one
# search runs without a slot: rare, and bounded by the cache's size.)
async def planner_slot(request: Request) -> AsyncIterator[None]:
    """The API's and the pages' slot. Reads the inputs itself, not as a FastAPI parameter, so
    that inputs it refuses are reported once, by the route."""
    if request.method == "POST":
        try:
            raw = await request.json()  # FastAPI has read the body already: no second read
        except ValueError:
            raw = None
    else:
        raw = query_inputs(request)
    query = parse_form(PlannerInputs, raw, LABELS)[0] if isinstance(raw, dict) else None
    # Inputs that fail these cheap checks fail before any search: nothing heavy follows.
    async with heavy_work_unless(request, query is None or query.is_planned()):
        yield


add_calculator_pages(
    router, PAGE, "planner", planner_context, slot=asynccontextmanager(planner_slot)
)


# The API takes PlannerInputs, not PlannerQuery: FastAPI validates a route's inputs on the event
# loop, and PlannerQuery's validation searches (seconds for the largest models). The search runs
# in the route's thread.
@router.get("/api/calc/planner", response_model=PlannerResult, tags=["calculators"],
            dependencies=[Depends(planner_slot)])  # fmt: skip
async def planner_api(query: Annotated[PlannerInputs, Query()]) -> Response:
    """Every valid dp x tp x pp x cp x ep layout of a model on a cluster, ranked by step time.

    Returns the fitting layouts fastest first (`top` of them), the Pareto front of step time
    and memory per GPU, how many candidates each rule cut (with the rule's reason), and the
    chosen layout's step time and memory term by term: the layout the query names (dp, tp,
    pp, cp, ep, zero_stage, ...) if it breaks no rule, else the best. `why_not` says why the
    named layout is not the best: the rules it breaks, that it does not fit, or how much
    slower it is and which step term is to blame. `run` names a published run
    (app.calc.planner.published): its model, cluster, batch and layout, and `published`
    sets the published figure beside the planner's for that layout, with the band and where
    it ranks. Memory from app.calc.training (Korthikanti
    et al. arXiv:2205.05198), FLOPs after Narayanan et al. arXiv:2104.04473 eq. (3),
    communication alpha-beta over the links each group is placed on (Megatron-Core's
    tp-cp-ep-dp-pp order), the bubble from the schedules' closed forms.
    """
    return await kept_answer("planner", query, PlannerResult, lambda: searched(query, "query"))


@router.post("/api/calc/planner", response_model=PlannerResult, tags=["calculators"],
             dependencies=[Depends(planner_slot)])  # fmt: skip
async def planner_api_post(query: PlannerInputs) -> Response:
    """The same as GET /api/calc/planner, with the inputs as a JSON body."""
    return await kept_answer("planner", query, PlannerResult, lambda: searched(query, "body"))
