"""The planner's answer as the page shows it: the ranked table, the scatter's data, the chosen
layout's step time and memory term by term, each term linked to the calculator that computes
it (with this layout's numbers filled in) and to the card that explains it.

Every number comes from app.calc.planner_query; this module picks, orders, formats and links.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from app.calc.communication_query import CommunicationQuery
from app.calc.compute_query import ComputeQuery
from app.calc.model import PRESETS
from app.calc.performance import measured_terms
from app.calc.pipeline_query import PipelineQuery
from app.calc.planner import LayoutCost, training_setup
from app.calc.planner_answer import chosen_cost, planner_result
from app.calc.planner_query import PlannerQuery
from app.calc.profiles import default_profile
from app.calc.training_query import MODEL_FIELDS, TrainingQuery
from app.calculators import communication_router, compute_router, pipeline_router, training_router
from app.calculators.communication_view import seconds
from app.formatting import memory
from app.i18n import say
from app.worked.planner import MEMORY_LABELS, STEP_LABELS, Term, planner_terms


@dataclass(frozen=True)
class PlannerView:
    result: dict[str, Any]
    chosen: LayoutCost | None
    step_terms: list[Term]
    memory_terms: list[Term]
    chart_json: str
    training_url: str | None


def _valid_url(model: type[BaseModel], values: dict[str, Any], url: Any) -> str | None:
    """The calculator's shareable address, or None where its bounds refuse these numbers."""
    try:
        return url(model.model_validate(values))
    except ValidationError:
        return None


def training_url(query: PlannerQuery, cost: LayoutCost) -> str | None:
    """The training-memory page showing this layout's memory per GPU (the same setup)."""
    setup = training_setup(query.plan().request, cost.layout, cost.microbatches)
    model, par, act = asdict(setup.model), setup.parallel, setup.activations
    values = {
        "preset": query.preset,
        **{name: model[name] for name in MODEL_FIELDS},
        "dp": par.dp, "tp": par.tp, "pp": par.pp, "ep": par.ep, "cp": par.cp,
        "zero_stage": par.zero_stage, "distributed_optimizer": par.distributed_optimizer,
        "recipe": setup.recipe, "optimizer": setup.optimizer, "seq_len": act.seq_len,
        "micro_batch": act.micro_batch, "microbatches": setup.microbatches,
        "sequence_parallel": act.sp, "recompute": act.recompute,
        "flash_attention": act.flash_attention, "dropout": act.dropout,
        "schedule": setup.schedule, "virtual_stages": setup.virtual_stages,
        "bucket_mb": setup.bucket_mb, "zero3_prefetch_layers": setup.zero3_prefetch_layers,
        "overhead_gb": setup.overhead_bytes / 1e9, "gpu": query.gpu_type.memory,
        # The terms a GPU reports beyond the textbook, with the default profile's values,
        # when the planner's profile has those values too.
        "measured": measured_terms(query.plan().request.profile)
        == measured_terms(default_profile()),
    }  # fmt: skip
    return _valid_url(TrainingQuery, values, training_router.shareable_url)


def _per_microbatch(cost: LayoutCost) -> tuple[float, float, float]:
    """(t_f, t_b, t_w) per micro-batch as the planner's bubble takes them (app.calc.planner)."""
    m, step = cost.microbatches, cost.step
    forward = (step.compute + step.memory_bound + step.fixed) / (3 * m)
    exposed = (step.exposed_tp + step.exposed_cp_ep) / m
    return forward + exposed / 2, forward + step.recompute / m + exposed / 2, forward


def pipeline_url(cost: LayoutCost) -> str | None:
    """The pipeline page with this layout's schedule, p, m, v and per-micro-batch times (ms)."""
    lay = cost.layout
    if lay.pp == 1:
        return None
    t_f, t_b, t_w = (float(f"{1e3 * t:.4g}") for t in _per_microbatch(cost))
    values = {
        "schedule": lay.schedule, "pp": lay.pp, "microbatches": cost.microbatches,
        "virtual_stages": lay.virtual_stages, "t_f": t_f, "t_b": t_b, "t_w": t_w, "t_p2p": 0,
    }  # fmt: skip
    return _valid_url(PipelineQuery, values, pipeline_router.shareable_url)


def communication_url(query: PlannerQuery, cost: LayoutCost) -> str | None:
    """The communication page with this layout, its links as placed, and its compute time."""
    model = query.model()
    if model != PRESETS.get(query.preset):
        return None  # that page takes presets only
    lay, links = cost.layout, asdict(cost.placement)
    n = query.plan().request.cluster
    link = {"intra-node": n.intra_node.slug, "inter-node": n.inter_node.slug}
    values = {
        "preset": query.preset, "dp": lay.dp, "tp": lay.tp, "pp": lay.pp, "ep": lay.ep,
        "cp": lay.cp, "zero_stage": 1 if lay.distributed_optimizer else lay.zero_stage,
        "sequence_parallel": lay.sp, "seq_len": query.seq_len, "micro_batch": lay.micro_batch,
        "microbatches": cost.microbatches, "compute_s": cost.step.compute,
        **{f"{s}_link": link[scope] for s, scope in links.items()},
    }  # fmt: skip
    return _valid_url(CommunicationQuery, values, communication_router.shareable_url)


def compute_url(query: PlannerQuery, cost: LayoutCost) -> str | None:
    """The compute page with this run's tokens, batch, GPUs and hardware utilisation."""
    if query.preset == "custom":
        return None
    values = {
        "preset": query.preset, "seq_len": query.seq_len, "tokens": query.token_budget,
        "batch": query.global_batch_tokens // query.seq_len, "gpu": query.gpu_type.accelerator,
        "gpus": cost.layout.world_size, "utilization": float(f"{cost.hfu:.4g}"),
    }  # fmt: skip
    return _valid_url(ComputeQuery, values, compute_router.shareable_url)


def _chart(result: dict[str, Any]) -> dict[str, Any]:
    """Every listed layout and the Pareto front as (memory GB, step s), sorted by memory."""
    points: dict[str, tuple[float, float, bool]] = {}
    for row in result["ranked"] + result["pareto"]:
        points[row["layout"]["description"]] = (
            row["memory_bytes"] / 1e9,
            row["step_time_s"],
            row["pareto"],
        )
    chosen = result["chosen"]
    rows = sorted(points.values())
    return {
        "memory_gb": [m for m, _, _ in rows],
        "step_s": [s for _, s, _ in rows],
        "front_s": [s if front else None for _, s, front in rows],
        "chosen": [chosen["memory_bytes"] / 1e9, chosen["step_time_s"]] if chosen else None,
        "limit_gb": result["cluster"]["gpu_memory_bytes"] / 1e9,
    }


def planner_view(query: PlannerQuery) -> PlannerView:
    result = planner_result(query, say)
    cost = chosen_cost(query)
    step_terms: list[Term] = []
    memory_terms: list[Term] = []
    url = None
    if cost is not None:
        url = training_url(query, cost)
        urls = {
            "training": url,
            "pipeline": pipeline_url(cost),
            "communication": communication_url(query, cost),
            "compute": compute_url(query, cost),
        }
        step_terms = planner_terms(STEP_LABELS, cost.step.terms(), seconds, urls)
        parts = {
            "model_states": cost.model_states_bytes,
            "activations": cost.activation_bytes,
            "loss": cost.loss_bytes,
            "other": cost.other_bytes,
            "allocator": cost.allocator_bytes,
        }
        memory_terms = planner_terms(MEMORY_LABELS, parts, memory, urls)
    return PlannerView(result, cost, step_terms, memory_terms, json.dumps(_chart(result)), url)
