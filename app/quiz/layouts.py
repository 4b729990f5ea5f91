"""Layout scenarios for the quiz and the mock interview: a model, a cluster and a batch, planned
by app.calc.planner. A scenario is an index, so a question stores only that and re-plans.

The clusters are small (16 to 64 GPUs) so one plan takes 50-150 ms; each is planned once per
process (`scenario_plan` is cached), so a question's answer is always the planner's, never a
stored number.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode

from app.calc.planner import Layout, Plan, PlanRequest, cluster, plan, plan_request
from app.calc.planner.request import STEP_TERM_WORDS
from app.calc.units import to_gb

# Tokens to train on: only the planner's "days" depend on it, and no question asks for them.
TOKEN_BUDGET = 1e12


@dataclass(frozen=True)
class Scenario:
    model: str  # app.calc.model.PRESETS
    nodes: int
    global_batch_tokens: int
    seq_len: int
    accelerator: str = "h100-sxm"
    gpu: str = "h100-80gb"
    intra_node: str = "nvlink4"
    inter_node: str = "ib-ndr"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("llama3-8b", nodes=2, global_batch_tokens=2**20, seq_len=4096),
    Scenario("llama2-13b", nodes=2, global_batch_tokens=2**20, seq_len=4096),
    Scenario("llama3-70b", nodes=8, global_batch_tokens=2**22, seq_len=8192),
    Scenario("mixtral-8x7b", nodes=4, global_batch_tokens=2**21, seq_len=4096),
    Scenario(
        "llama3-70b",
        nodes=8,
        global_batch_tokens=2**22,
        seq_len=4096,
        accelerator="a100-80gb-sxm",
        gpu="a100-80gb",
        intra_node="nvlink3",
        inter_node="ib-hdr",
    ),  # fmt: skip
)


def request_for(s: Scenario, token_budget: float = TOKEN_BUDGET) -> PlanRequest:
    """The planner's request for a scenario; a design round (app/quiz/design_rounds.py) gives
    its own token budget, since its days are graded."""
    machines = cluster(s.accelerator, s.gpu, 8, s.nodes, s.intra_node, s.inter_node)
    return plan_request(s.model, machines, s.global_batch_tokens, s.seq_len, token_budget)


@lru_cache(maxsize=64)  # the mock's scenarios and the design rounds' clusters
def plan_for(s: Scenario, token_budget: float = TOKEN_BUDGET) -> Plan:
    return plan(request_for(s, token_budget))


def scenario_request(index: int) -> PlanRequest:
    return request_for(SCENARIOS[index])


def scenario_plan(index: int) -> Plan:
    return plan_for(SCENARIOS[index])


def scenario_fields(index: int) -> dict[str, str]:
    """How a scenario reads in a prompt."""
    req = scenario_request(index)
    n = req.cluster
    return {
        "model": req.model.name,
        "gpus": str(n.gpus),
        "accelerator": n.accelerator.name,
        "nodes": str(n.nodes),
        "gpus_per_node": str(n.gpus_per_node),
        "intra_node": n.intra_node.name,
        "inter_node": n.inter_node.name,
        "memory_gb": f"{to_gb(n.gpu_memory_bytes):.1f}",
        "batch_tokens": f"{req.global_batch_tokens:,}",
        "batch_sequences": f"{req.global_batch_sequences:,}",
        "seq_len": f"{req.seq_len:,}",
    }


def planner_url(scenario: int, layout: Layout | None = None) -> str:
    """The planner page (app/calculators/planner_router.py) on this scenario, and optionally
    one layout for its "why not"; the page's query fields are app.calc.planner_query's."""
    return planner_url_for(SCENARIOS[scenario], layout)


def planner_url_for(s: Scenario, layout: Layout | None = None) -> str:
    """planner_url for any scenario, a design round's among them."""
    query: dict[str, object] = {
        "preset": s.model, "gpu": s.accelerator, "gpus_per_node": 8, "nodes": s.nodes,
        "intra_node": s.intra_node, "inter_node": s.inter_node,
        "global_batch_tokens": s.global_batch_tokens, "seq_len": s.seq_len,
    }  # fmt: skip
    if layout is not None:
        query |= {
            "dp": layout.dp, "tp": layout.tp, "pp": layout.pp, "cp": layout.cp, "ep": layout.ep,
            "zero_stage": layout.zero_stage,
            "distributed_optimizer": str(layout.distributed_optimizer).lower(),
            "recompute": layout.recompute, "micro_batch": layout.micro_batch,
            "schedule": layout.schedule, "virtual_stages": layout.virtual_stages,
        }  # fmt: skip
    return f"/calculators/planner?{urlencode(query)}"


SCHEDULE_TEXT = {
    "1f1b": "1F1B",
    "interleaved": "interleaved 1F1B",
    "zb-h1": "ZB-H1",
    "gpipe": "GPipe",
}
RECOMPUTE_TEXT = {"none": "no recompute", "selective": "selective recompute",
                  "full": "full recompute"}  # fmt: skip
# The planner's step terms (app.calc.planner.STEP_TERMS) and "memory", as a sentence says them.
TERM_TEXT = {**STEP_TERM_WORDS, "memory": "memory"}


def layout_text(layout: Layout) -> str:
    """'DP 4 × TP 8 × PP 2, ZeRO-1, no recompute, micro-batch 1, 1F1B' (degrees of 1 left out
    except DP)."""
    degrees = [f"DP {layout.dp}"] + [
        f"{name.upper()} {getattr(layout, name)}"
        for name in ("tp", "pp", "cp", "ep")
        if getattr(layout, name) > 1
    ]
    if layout.distributed_optimizer:
        sharding = "distributed optimizer"
        if layout.zero_stage:  # a rule breaker: both named, or the option hides what it breaks
            sharding += f" + ZeRO-{layout.zero_stage}"
    else:
        sharding = f"ZeRO-{layout.zero_stage}" if layout.zero_stage else "no ZeRO"
    schedule = SCHEDULE_TEXT.get(layout.schedule, layout.schedule)
    if layout.virtual_stages > 1:
        schedule += f" (v = {layout.virtual_stages})"
    parts = [" × ".join(degrees), sharding, RECOMPUTE_TEXT.get(layout.recompute, layout.recompute),
             f"micro-batch {layout.micro_batch}"]  # fmt: skip
    if layout.pp > 1 or layout.schedule != "1f1b" or layout.virtual_stages > 1:
        parts.append(schedule)
    return ", ".join(parts)
