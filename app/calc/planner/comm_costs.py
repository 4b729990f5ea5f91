"""Where a layout's parallel groups run and what their collectives cost: the link each group's
ring runs over (Megatron's rank order, app.calc.planner's docstring), the seconds of each
strategy's calls from app.calc.comm_volume on app.calc.links, and NCCL's buffers."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from app.calc.comm_volume import DTYPE_BYTES, CommLayout, strategy_calls
from app.calc.links import Link, alpha_beta_time
from app.calc.performance import PerformanceProfile
from app.calc.planner.request import PLACEMENT_ORDER, Cluster, Layout, PlanRequest
from app.calc.planner.results import Placement
from app.calc.planner.rules import Degrees
from app.calc.training_measured import communicators


def _scope(n: Cluster, span: int) -> str:
    """'intra-node' when a group spanning `span` consecutive ranks sits inside one node."""
    return "intra-node" if n.gpus_per_node % span == 0 else "inter-node"


def placement(request: PlanRequest, layout: Layout) -> Placement:
    """Links per group under Megatron's tp-cp-ep-dp-pp rank order (module docstring)."""
    n, lay = request.cluster, layout
    return Placement(
        tp=_scope(n, lay.tp),
        cp=_scope(n, lay.tp * lay.cp),
        ep=_scope(n, lay.tp * lay.ep),
        dp=_scope(n, lay.tp * lay.cp * lay.dp),
        pp=_scope(n, lay.world_size),
    )


# The calls depend on the layout alone, not on the performance profile: kept across requests,
# so that a calibration's thousands of evaluations of the same runs under different profiles
# compute each once.
_strategy_calls = lru_cache(maxsize=16384)(strategy_calls)


def comm_seconds(
    request: PlanRequest,
    layout: CommLayout,
    links: Placement,
    strategies: tuple[str, ...] = PLACEMENT_ORDER,
) -> dict[str, float]:
    """Seconds one GPU spends in each strategy's collectives in one step, at the bus bandwidth
    the request's profile reaches on each link (0 for the strategies not asked for)."""
    element_bytes = DTYPE_BYTES[request.dtype]
    seconds = dict.fromkeys(PLACEMENT_ORDER, 0.0)
    achieved = achieved_links(request)
    for call in _strategy_calls(layout, strategies):
        link = achieved[getattr(links, call.strategy)]
        per_call = alpha_beta_time(call.sent_elements * element_bytes, call.steps, link)
        seconds[call.strategy] += call.calls * per_call
    return seconds


def achieved_links(request: PlanRequest) -> dict[str, Link]:
    """The cluster's two links at the bus bandwidth the profile says NCCL reaches on them."""
    n, prof = request.cluster, request.profile
    return {
        "intra-node": _at_efficiency(n.intra_node, prof.intra_link_efficiency),
        "inter-node": _at_efficiency(n.inter_node, prof.inter_link_efficiency),
    }


@lru_cache(maxsize=256)
def _at_efficiency(link: Link, efficiency: float) -> Link:
    return replace(link, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s * efficiency)


def communicator_bytes(profile: PerformanceProfile, d: Degrees) -> float:
    """NCCL's buffers: one communicator per parallel group of more than one GPU (two for the
    pipeline's sends to the previous and the next stage)."""
    return profile.nccl_bytes * communicators(d.dp, d.tp, d.pp, d.cp, d.ep)
