"""What the planner answers: step times, costs, rejections, plans and why-nots."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from app.calc.planner.request import STEP_TERMS, Layout, PlanRequest


@dataclass(frozen=True)
class StepTime:
    """One optimizer step, in seconds, term by term (module docstring)."""

    compute: float  # GEMMs and the attention core, forward and backward
    memory_bound: float  # norms, activations, rotary, loss, optimizer step: bytes at HBM speed
    recompute: float  # the recomputation's extra forward
    exposed_tp: float
    exposed_cp_ep: float
    exposed_pp: float
    exposed_dp: float
    bubble: float
    fixed: float  # kernels' fixed costs, per micro-batch and per step overheads

    @property
    def total(self) -> float:
        return sum(getattr(self, name) for name in STEP_TERMS)

    def terms(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in STEP_TERMS}


@dataclass(frozen=True)
class Placement:
    """Which link each group's collectives run over: 'intra-node' or 'inter-node'."""

    tp: str
    cp: str
    ep: str
    dp: str
    pp: str


@dataclass(frozen=True)
class LayoutCost:
    layout: Layout
    microbatches: int  # m: micro-batches per step per pipeline
    memory_bytes: float  # per GPU at its peak stage, as the allocator reserves it
    model_states_bytes: float  # weights, gradients, master weights, optimizer states
    activation_bytes: float
    other_bytes: float  # buffers and overhead
    fits: bool
    headroom_bytes: float
    step: StepTime
    model_flops_per_step: float  # what MFU counts (no recompute)
    hardware_flops_per_step: float  # with the recompute
    mfu: float
    hfu: float
    tokens_per_s: float
    days: float  # for the request's token budget
    placement: Placement
    peak_flops: float  # per GPU, the dtype's dense peak the utilisations divide by
    # Memory as measured beside the textbook terms: the loss's temporaries over an fp32 copy
    # of the logits where the last stage peaks, and the caching allocator's reserve
    # (app.calc.performance); memory_bytes includes both.
    loss_bytes: float = 0.0
    allocator_bytes: float = 0.0

    @property
    def step_time_s(self) -> float:
        return self.step.total

    @property
    def hardware_flops_per_gpu_s(self) -> float:
        """Achieved FLOP/s per GPU counting the recompute: how Megatron-LM reports it."""
        return self.hfu * self.peak_flops


@dataclass(frozen=True)
class Rejected:
    layout: Layout
    rule: str  # a key of RULES
    reason: str  # with this layout's numbers


@dataclass(frozen=True)
class RejectionGroup:
    rule: str
    description: str  # RULES[rule]
    count: int  # candidates cut by this rule; a degree-level cut counts once
    examples: tuple[Rejected, ...]


@dataclass(frozen=True)
class Plan:
    request: PlanRequest
    ranked: tuple[LayoutCost, ...]  # fitting layouts, fastest first, request.top of them
    pareto: tuple[LayoutCost, ...]  # fitting, non-dominated in (step time, memory per GPU)
    rejected: tuple[RejectionGroup, ...]  # by rule, most frequent first
    enumerated: int  # candidates looked at
    valid: int  # passed every rule (fitting or not)
    feasible: int  # valid and fitting
    # Every feasible layout's step time to the microsecond, ascending: ranks a layout that
    # is not among the `top` listed without keeping every cost (DeepSeek-V3 has 700k).
    step_times_s: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @property
    def best(self) -> LayoutCost | None:
        return self.ranked[0] if self.ranked else None

    def rank_of(self, step_time_s: float) -> int:
        """1 + the feasible layouts faster than `step_time_s` (a microsecond is a tie)."""
        return bisect.bisect_left(self.step_times_s, round(step_time_s, 6)) + 1


@dataclass(frozen=True)
class WhyNot:
    """Why a user-picked layout is not the plan's best."""

    layout: Layout
    rejected: tuple[Rejected, ...]  # every rule it breaks; empty if valid
    cost: LayoutCost | None  # None when rejected
    best: LayoutCost | None
    slowdown: float | None  # step time / best step time
    blame: str | None  # the step term (or "memory") most responsible
    blame_s: float  # how much longer that term is than the best layout's
    explanation: str
