"""The layout planner's full answer as plain data: what the JSON API returns and `--json`
prints, and what a page lays out. The numbers are app.calc.planner's; the question is
app.calc.planner_query's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from app.calc.model import count_params
from app.calc.performance import PerformanceProfile
from app.calc.planner import RULES, STEP_TERMS, Layout, LayoutCost, WhyNot
from app.calc.planner.published import RunCost, evaluate_run, strict_rule
from app.calc.planner_fields import LAYOUT_FIELDS

if TYPE_CHECKING:
    from app.calc.planner_query import PlannerInputs

# How the answer's words reach the reader: str, English; a page's translation (app.i18n.say).
Say = Callable[[str], str]


def profile_data(profile: PerformanceProfile) -> dict[str, Any]:
    """A profile as plain data: its name, where it came from and every parameter."""
    return {
        "name": profile.name,
        "source": profile.source,
        "values": profile.values(),
        "gemm_flops": profile.gemm_flops,
        "hbm_bytes_per_s": profile.hbm_bytes_per_s,
    }


def layout_data(layout: Layout) -> dict[str, Any]:
    return {
        **{name: getattr(layout, name) for name in LAYOUT_FIELDS},
        "sequence_parallel": layout.sp,
        "gpus": layout.world_size,
        "description": layout.describe(),
    }


def cost_data(cost: LayoutCost, pareto: bool) -> dict[str, Any]:
    """One layout's cost: memory per GPU and the step time term by term, in raw units."""
    return {
        "layout": layout_data(cost.layout),
        "microbatches": cost.microbatches,
        "memory_bytes": cost.memory_bytes,
        "model_states_bytes": cost.model_states_bytes,
        "activation_bytes": cost.activation_bytes,
        "other_bytes": cost.other_bytes,
        "loss_bytes": cost.loss_bytes,
        "allocator_bytes": cost.allocator_bytes,
        "fits": cost.fits,
        "headroom_bytes": cost.headroom_bytes,
        "step_time_s": cost.step_time_s,
        "step": cost.step.terms(),
        "mfu": cost.mfu,
        "hfu": cost.hfu,
        "tokens_per_s": cost.tokens_per_s,
        "days": cost.days,
        "placement": asdict(cost.placement),
        "pareto": pareto,
    }


def _why_not_data(why: WhyNot, say: Say) -> dict[str, Any]:
    return {
        "layout": layout_data(why.layout),
        "valid": not why.rejected,
        "broken": [
            {"rule": r.rule, "description": say(RULES[r.rule]), "reason": say(r.reason)}
            for r in why.rejected
        ],
        "fits": why.cost.fits if why.cost else None,
        "slowdown": why.slowdown,
        "blame": why.blame,
        "blame_s": why.blame_s,
        "explanation": say(why.explanation),
    }


def published_data(query: PlannerInputs, say: Say = str) -> dict[str, Any] | None:
    """The run the query names: its figure beside the planner's for the published layout, the
    ratio and its band, the rule the layout breaks with equal stages, and where it ranks."""
    run = query.published_run
    if run is None:
        return None
    result = query.plan()
    rated = evaluate_run(run, result.request)
    rule = strict_rule(run)
    data: dict[str, Any] = {
        "slug": run.slug, "title": run.title, "source": run.source,
        "layout": layout_data(run.layout), "metric": run.metric, "published": run.published,
        "band": list(run.band), "gap": run.gap, "strict_rule": rule,
        "strict_rule_description": say(RULES[rule]) if rule else None,
        "broken": None, "predicted": None, "ratio": None, "in_band": None, "fits": None,
        "rank": None, "listed": len(result.ranked), "feasible": result.feasible,
        "slowdown": None,
    }  # fmt: skip
    if not isinstance(rated, RunCost):
        data["broken"] = rated
        return data
    step = rated.cost.step_time_s
    best = result.best
    data.update(
        predicted=rated.predicted, ratio=rated.ratio, fits=rated.cost.fits,
        in_band=run.band[0] <= rated.ratio <= run.band[1],
        # Among every feasible layout by step time; a layout that does not fit has none.
        rank=result.rank_of(step) if rated.cost.fits else None,
        slowdown=step / best.step_time_s if best else None,
    )  # fmt: skip
    return data


def chosen_cost(query: PlannerInputs) -> LayoutCost | None:
    """The layout whose breakdown is shown: the one the query names if it breaks no rule,
    else the best."""
    why = query.why_not()
    if why is not None and why.cost is not None:
        return why.cost
    return query.plan().best


def planner_result(query: PlannerInputs, say: Say = str) -> dict[str, Any]:
    """The planner's full answer as plain data: what the API returns and `--json` prints.

    Its words (the rules, why a layout is refused or slower) in English; a page passes `say`
    to have them in its reader's language (app.i18n.say)."""
    result = query.plan()
    req = result.request
    front = {c.layout for c in result.pareto}
    chosen = chosen_cost(query)
    why = query.why_not()
    counts = count_params(req.model)
    n = req.cluster
    return {
        "model": req.model.name,
        "total_params": counts.total,
        "active_params": counts.active,
        "cluster": {
            "gpu": n.accelerator.slug,
            "gpu_name": n.accelerator.name,
            "gpu_memory_bytes": n.gpu_memory_bytes,
            "gpus_per_node": n.gpus_per_node,
            "nodes": n.nodes,
            "gpus": n.gpus,
            "intra_node": n.intra_node.slug,
            "inter_node": n.inter_node.slug,
        },
        "global_batch_tokens": req.global_batch_tokens,
        "global_batch_sequences": req.global_batch_sequences,
        "seq_len": req.seq_len,
        "token_budget": req.token_budget,
        "matmul_efficiency": req.efficiency,
        "profile": profile_data(req.profile),
        "enumerated": result.enumerated,
        "valid": result.valid,
        "feasible": result.feasible,
        "ranked": [cost_data(c, c.layout in front) for c in result.ranked],
        "pareto": [cost_data(c, True) for c in result.pareto],
        "rejected": [
            {
                "rule": g.rule,
                "description": say(g.description),
                "count": g.count,
                "examples": [
                    {"layout": layout_data(r.layout), "reason": say(r.reason)} for r in g.examples
                ],
            }
            for g in result.rejected
        ],
        "chosen": cost_data(chosen, chosen.layout in front) if chosen else None,
        "chosen_is_best": chosen is not None and chosen == result.best,
        "why_not": _why_not_data(why, say) if why else None,
        "published": published_data(query, say),
        "step_terms": list(STEP_TERMS),
    }
