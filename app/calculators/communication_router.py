"""The communication calculator: its page, the live fragment, and its JSON API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from app.calc.comm import Collective
from app.calc.comm_volume import DTYPE_BYTES
from app.calc.communication_query import LABELS, CommunicationQuery, communication_result
from app.calc.links import LINKS
from app.calc.model import PRESETS
from app.calculators.communication_view import communication_view, gigabytes, rate, seconds
from app.calculators.pages import add_calculator_pages, share_url
from app.calculators.results import kept_answer
from app.forms import parse_form, query_inputs
from app.route_guards import GuardedRoute

router = APIRouter(route_class=GuardedRoute)

PAGE = "/calculators/communication"


class CollectiveOut(BaseModel):
    strategy: str = Field(description="dp, tp, pp, ep or cp.")
    label: str
    collective: str = Field(description="all_reduce, reduce_scatter, all_gather, all_to_all, send")
    ranks: int
    calls_per_step: int
    payload_elements: float = Field(description="S of one call, as nccl-tests sizes it.")
    sent_elements_per_call: float = Field(description="Elements one GPU sends in one call.")
    elements_per_step: float
    bytes_per_step: float
    latency_steps_per_call: int
    link: str
    time_per_call_s: float
    time_s: float
    bus_factor: float = Field(description="busbw / algbw (nccl-tests doc/PERFORMANCE.md).")
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    formula: str = Field(description="LaTeX, symbolic: elements per GPU per step.")
    substituted: str = Field(description="LaTeX, with this request's numbers.")
    source: str


class StrategyOut(BaseModel):
    strategy: str
    label: str
    ranks: int
    link: str
    elements_per_step: float
    bytes_per_step: float
    time_s: float


class LinkOut(BaseModel):
    slug: str
    name: str
    bandwidth_bytes_per_s: float = Field(description="Per GPU, per direction.")
    latency_s: float = Field(description="alpha, per ring step.")
    scope: str
    source: str


class RingOut(BaseModel):
    ranks: int = Field(description="N_d = dp * cp, the ranks that reduce the gradients.")
    share: float = Field(description="(N-1)/N: all-gather and reduce-scatter.")
    all_reduce_factor: float = Field(description="2(N-1)/N: all-reduce.")


class OneCollectiveOut(BaseModel):
    collective: str = Field(description="all_reduce, reduce_scatter, all_gather, all_to_all, "
                            "broadcast, reduce, gather or scatter.")  # fmt: skip
    ranks: int
    payload_bytes: float = Field(description="S, as nccl-tests sizes it.")
    bus_factor: float = Field(description="busbw / algbw, nccl-tests' *GetBw.")
    bus_factor_latex: str
    sent_bytes: float = Field(description="bus_factor * S: what the busiest rank's link carries.")
    latency_steps: int
    link: str
    time_s: float = Field(description="latency_steps * alpha + sent_bytes / beta.")
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    source: str = Field(description="nccl-tests file:line of the factor.")


class CommunicationResult(BaseModel):
    model: str
    total_params: int
    active_params: int
    gpus: int
    layers_in_stage: int
    dtype: str
    bytes_per_element: int
    ring: RingOut
    collectives: list[CollectiveOut]
    strategies: list[StrategyOut]
    links: dict[str, LinkOut]
    bytes_per_step: float
    comm_s: float
    compute_s: float
    step_s_perfect_overlap: float = Field(description="max(compute, communication).")
    step_s_no_overlap: float = Field(description="compute + communication.")
    collective: OneCollectiveOut = Field(description="The collective chosen, on its own.")
    all_collectives: list[OneCollectiveOut] = Field(
        description="Every collective with the same N, S and link."
    )


def shareable_url(query: CommunicationQuery) -> str:
    """The page's address holding every input, in the schema's order."""
    return share_url(PAGE, query.model_dump())


def page_context(request: Request) -> tuple[dict[str, object], int]:
    """The page's (and its fragment's) context for the request's inputs, and its status; the
    cards' worked examples render the same fragment with it (app.cards.examples)."""
    raw = query_inputs(request)
    query, errors = parse_form(CommunicationQuery, raw, LABELS)
    options = {
        "presets": [(k, v.name) for k, v in PRESETS.items()],
        "links": [(k, link.name) for k, link in LINKS.items()],
        "dtypes": [(k, f"{k} ({n} B)") for k, n in DTYPE_BYTES.items()],
        "collectives": [(kind.value, kind.value.replace("_", "-")) for kind in Collective],
        "fmt": {"seconds": seconds, "gb": gigabytes, "rate": rate},
    }
    if query is None:
        defaults = CommunicationQuery().model_dump()
        return {"errors": errors, "query": None, "values": {**defaults, **raw}, **options}, 422
    return {
        "errors": [],
        "query": query,
        "values": query.model_dump(),
        "view": communication_view(query),
        "share_url": shareable_url(query),
        **options,
    }, 200


add_calculator_pages(router, PAGE, "communication", page_context)


@router.get("/api/calc/communication", response_model=CommunicationResult, tags=["calculators"])
async def communication(query: Annotated[CommunicationQuery, Query()]) -> Response:
    """Communication volume and time per GPU per training step, collective by collective.

    Ring volumes per GPU: all-reduce 2(N-1)/N, reduce-scatter / all-gather / all-to-all
    (N-1)/N of the payload (nccl-tests doc/PERFORMANCE.md). DP and ZeRO after Rajbhandari et
    al. (arXiv:1910.02054, Section 7: 2 Psi, ZeRO-3 3 Psi); TP after Megatron-LM
    (arXiv:1909.08053, Section 3: 4 all-reduces of b*s*h per layer), with sequence
    parallelism after arXiv:2205.05198 Section 4.2.2; PP activations and gradients per
    micro-batch; EP all-to-all (GShard, arXiv:2006.16668); CP ring passes of K and V
    (Megatron-Core context-parallel docs). Time: alpha-beta model over each dimension's link.

    `collective` and `all_collectives`: one collective of S on N ranks on its own, with
    nccl-tests' bus-bandwidth factors (src/*.cu *GetBw): all-reduce 2(N-1)/N; reduce-scatter,
    all-gather, all-to-all, gather and scatter (N-1)/N; broadcast and reduce 1.
    """
    return await kept_answer(
        "communication", query, CommunicationResult, lambda: communication_result(query)
    )
