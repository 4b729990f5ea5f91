"""The search: every candidate layout, the rules that cut it, the ranking and the Pareto front."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from app.calc.planner.costs import Costs, Grid
from app.calc.planner.request import (
    STEP_TERMS,
    ZERO_OPTIONS,
    Layout,
    PlanRequest,
    check_request,
)
from app.calc.planner.results import Plan, Rejected, RejectionGroup, WhyNot
from app.calc.planner.rules import RULES, Degrees, degree_rules, knob_rules, violations

EXAMPLES_PER_RULE = 3


def _divisors(n: int) -> list[int]:
    """Ascending; pairs up to sqrt(n), since a replica may hold 2**20 sequences or more."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in reversed(small) if k * k != n]


class _Rejections:
    """Counts per rule and the first few rejected layouts of each."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[Rejected]] = {}

    def add(self, layout: Callable[[], Layout], rule: str, reason: str, count: int = 1) -> None:
        self.counts[rule] = self.counts.get(rule, 0) + count
        kept = self.examples.setdefault(rule, [])
        if len(kept) < EXAMPLES_PER_RULE:
            kept.append(Rejected(layout(), rule, reason))

    def groups(self) -> tuple[RejectionGroup, ...]:
        order = sorted(self.counts, key=lambda r: (-self.counts[r], r))
        return tuple(
            RejectionGroup(r, RULES[r], self.counts[r], tuple(self.examples[r])) for r in order
        )


def _schedules(req: PlanRequest, pp: int) -> list[tuple[str, int]]:
    """(schedule, v) pairs to try: v only where pp * v can split the layers."""
    if pp == 1:
        return [("1f1b", 1)]
    found = []
    layers = req.model.layers
    for schedule in req.schedules:
        if schedule != "interleaved":
            found.append((schedule, 1))
            continue
        for v in range(2, req.max_virtual_stages + 1):
            if pp * v <= layers and (req.uneven_pipeline or layers % (pp * v) == 0):
                found.append((schedule, v))
    return found


# One fitting layout while searching: (step time, memory, layout fields for Layout(...)).
_Found = tuple[float, float, Degrees, int, bool, str, int, str, int]


def _rank_key(f: _Found) -> tuple[float, float]:
    # Step times equal to the microsecond are a tie, won by the smaller memory: otherwise the
    # "best" of a tie could sit off the Pareto front (same time, more memory).
    return (round(f[0], 6), f[1])


def _layout(f: _Found) -> Layout:
    _, _, d, zero, dist, recompute, b, schedule, v = f
    return Layout(d.dp, d.tp, d.pp, d.cp, d.ep, zero, dist, recompute, b, schedule, v)


def _pareto(found: list[_Found]) -> list[_Found]:
    """Fitting layouts that no other beats on both step time and memory (ties: the first)."""
    front: list[_Found] = []
    for f in sorted(found, key=_rank_key):
        if not front or f[1] < front[-1][1]:
            front.append(f)
    return front


def plan(request: PlanRequest) -> Plan:
    """Every candidate layout of the request: ranked, the Pareto front, and the rejected.

    Candidates: every (tp, pp, cp) dividing the GPUs with dp the rest, every ep dividing
    both dp * cp and the experts (MoE only), the ZeRO options (0-3 and Megatron's
    distributed optimizer), the recompute modes, each micro-batch dividing a replica's
    sequences up to max_micro_batch, and the schedules (interleaved with each
    v = 2..max_virtual_stages that splits the layers). A rule that cuts a degree split
    counts once in Plan.rejected, whatever it would have expanded to; a rule that cuts a
    (ZeRO, b, schedule) counts once per recompute mode.
    """
    check_request(request)
    req, n = request, request.cluster.gpus
    costs = Costs(req)
    rejections = _Rejections()
    counts = [0, 0]  # enumerated, valid
    found: list[_Found] = []
    moe, experts = req.model.experts > 1, req.model.experts
    for tp in _divisors(n):
        for pp in _divisors(n // tp):
            for cp in _divisors(n // (tp * pp)):
                dp = n // (tp * pp * cp)
                for ep in _divisors(math.gcd(dp * cp, experts)) if moe else [1]:
                    d = Degrees(dp, tp, pp, cp, ep, tp > 1)
                    problem = next(degree_rules(req, d), None)
                    if problem:
                        counts[0] += 1
                        rejections.add(lambda d=d: Layout(d.dp, d.tp, d.pp, d.cp, d.ep), *problem)
                        continue
                    _search_split(req, costs, d, rejections, found, counts)
    found.sort(key=_rank_key)
    return Plan(
        request=req,
        ranked=tuple(costs.cost(_layout(f)) for f in found[: req.top]),
        pareto=tuple(costs.cost(_layout(f)) for f in _pareto(found)),
        rejected=rejections.groups(),
        enumerated=counts[0],
        valid=counts[1],
        feasible=len(found),
        step_times_s=tuple(_rank_key(f)[0] for f in found),
    )


def _search_split(
    req: PlanRequest,
    costs: Costs,
    d: Degrees,
    rejections: _Rejections,
    found: list[_Found],
    counts: list[int],
) -> None:
    """Every knob combination of one valid degree split; adds to `found` and `counts`."""
    per_replica = req.global_batch_sequences // d.dp
    micro_batches = [b for b in _divisors(per_replica) if b <= req.max_micro_batch]
    schedules = _schedules(req, d.pp)
    modes = req.recompute_modes
    capacity = req.cluster.gpu_memory_bytes
    grid: Grid | None = None
    for zero, dist in ZERO_OPTIONS:
        zero_terms = None
        for b in micro_batches:
            m = per_replica // b
            for schedule, v in schedules:
                counts[0] += len(modes)
                lay = Layout(d.dp, d.tp, d.pp, d.cp, d.ep, zero, dist, "none", b, schedule, v)
                problem = next(knob_rules(req, lay), None)
                if problem is None and schedule == "gpipe":
                    problem = ("gpipe_dominated", "1F1B has the same bubble")
                if problem:
                    rejections.add(lambda lay=lay: lay, *problem, count=len(modes))
                    continue
                grid = grid or costs.grid(d)
                zero_terms = zero_terms or costs.zero_terms(d, zero, dist)
                fixed = zero_terms[0] + zero_terms[1]
                for recompute in modes:
                    if recompute == "selective" and req.flash_attention:
                        rejections.add(
                            lambda lay=lay: replace(lay, recompute="selective"),
                            "selective_same_as_none",
                            "FlashAttention is on",
                        )
                        continue
                    counts[1] += 1
                    *terms, activations = costs.numbers(
                        grid, zero_terms, recompute, b, m, schedule, v
                    )
                    memory = fixed + activations
                    if memory > capacity:
                        rejections.add(
                            lambda lay=lay, r=recompute: replace(lay, recompute=r),
                            "out_of_memory",
                            f"needs {memory / 1e9:.1f} GB per GPU, has {capacity / 1e9:.1f} GB",
                        )
                        continue
                    found.append((sum(terms), memory, d, zero, dist, recompute, b, schedule, v))


def why_not(plan_: Plan, layout: Layout) -> WhyNot:
    """Why `layout` is not the plan's best: the rules it breaks, that it does not fit, or how
    much slower it is and which step term, against the best layout's, is to blame."""
    req, best = plan_.request, plan_.best
    broken = violations(req, layout)
    if broken:
        reasons = "; ".join(f"{r.rule}: {r.reason}" for r in broken)
        return WhyNot(
            layout, broken, None, best, None, None, 0.0, f"not a valid layout ({reasons})"
        )
    cost = Costs(req).cost(layout)
    if not cost.fits:
        text = (
            f"does not fit: needs {cost.memory_bytes / 1e9:.1f} GB per GPU (model states "
            f"{cost.model_states_bytes / 1e9:.1f}, activations "
            f"{cost.activation_bytes / 1e9:.1f}), has {req.cluster.gpu_memory_bytes / 1e9:.1f}"
        )
        return WhyNot(layout, (), cost, best, None, "memory", 0.0, text)
    if best is None:
        return WhyNot(
            layout, (), cost, None, None, None, 0.0, "it fits; no layout in the plan does"
        )
    slowdown = cost.step_time_s / best.step_time_s
    mine, theirs = cost.step.terms(), best.step.terms()
    excess = {name: mine[name] - theirs[name] for name in STEP_TERMS}
    blame = max(excess, key=lambda k: excess[k])
    if slowdown <= 1 + 1e-9:
        text = "as fast as the plan's best layout"
    else:
        text = (
            f"{slowdown:.2f}x the best step time ({cost.step_time_s:.3g} s vs "
            f"{best.step_time_s:.3g} s); the largest gap is {blame} (+{excess[blame]:.3g} s)"
        )
    return WhyNot(layout, (), cost, best, slowdown, blame, excess[blame], text)
