"""What a layout costs: memory per GPU from app.calc.training, FLOPs from app.calc.flops,
communication from app.calc.comm_volume on app.calc.links, the bubble from app.calc.pipeline.

The modelling choices are in app.calc.planner's docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from app.calc.activations import ActivationSetup, in_flight_microbatches
from app.calc.comm_volume import DTYPE_BYTES, CommLayout, step_calls
from app.calc.flops import SECONDS_PER_DAY, training_flops_per_token
from app.calc.hardware import peak_flops
from app.calc.links import Link, alpha_beta_time
from app.calc.model import count_params
from app.calc.pipeline import PipelineSetup, closed_form
from app.calc.planner.request import PLACEMENT_ORDER, RECOMPUTE, Cluster, Layout, PlanRequest
from app.calc.planner.results import LayoutCost, Placement, Rejected, StepTime
from app.calc.planner.rules import Degrees, degrees_of, violations
from app.calc.training import MemoryReport, Parallelism, Term, TrainingSetup, training_memory


def training_setup(request: PlanRequest, layout: Layout, microbatches: int = 1) -> TrainingSetup:
    """The app.calc.training setup of a layout: what its memory report is computed from.

    ZB-H1 keeps 1F1B's peak activations (Qi et al. arXiv:2401.10241 Section 2.1), so it is
    passed to the memory calculator as 1F1B.
    """
    memory_schedule = "1f1b" if layout.schedule == "zb-h1" or layout.pp == 1 else layout.schedule
    return TrainingSetup(
        model=request.model,
        parallel=Parallelism(
            dp=layout.dp,
            tp=layout.tp,
            pp=layout.pp,
            ep=layout.ep,
            cp=layout.cp,
            zero_stage=layout.zero_stage,
            distributed_optimizer=layout.distributed_optimizer,
        ),
        activations=ActivationSetup(
            seq_len=request.seq_len,
            micro_batch=layout.micro_batch,
            tp=layout.tp,
            sp=layout.sp,
            cp=layout.cp,
            recompute=layout.recompute,  # type: ignore[arg-type]
            flash_attention=request.flash_attention,
            dropout=request.dropout,
        ),
        recipe=request.recipe,
        optimizer=request.optimizer,
        microbatches=microbatches,
        schedule=memory_schedule,
        virtual_stages=layout.virtual_stages if memory_schedule == "interleaved" else 1,
        overhead_bytes=request.overhead_bytes,
    )


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


def _link(n: Cluster, scope: str) -> Link:
    return n.intra_node if scope == "intra-node" else n.inter_node


def comm_seconds(request: PlanRequest, layout: CommLayout, links: Placement) -> dict[str, float]:
    """Seconds one GPU spends in each strategy's collectives in one step."""
    element_bytes = DTYPE_BYTES[request.dtype]
    seconds = dict.fromkeys(PLACEMENT_ORDER, 0.0)
    for call in step_calls(layout):
        link = _link(request.cluster, getattr(links, call.strategy))
        per_call = alpha_beta_time(call.sent_elements * element_bytes, call.steps, link)
        seconds[call.strategy] += call.calls * per_call
    return seconds


PER_MICRO_BATCH = ("tp", "cp", "ep", "pp")  # strategies that communicate every micro-batch


@dataclass(frozen=True)
class Grid:
    """What one (dp, tp, pp, cp, ep, sp) split costs, before ZeRO, recompute, b and schedule."""

    degrees: Degrees
    placement: Placement
    # per sequence of one micro-batch on this GPU, seconds: forward, recompute, attention core
    forward_s: float
    recompute_s: dict[str, float]
    attention_core_s: float
    # per micro-batch seconds = c1 + c2 * b, for tp, cp, ep, pp
    per_mb_latency: dict[str, float]
    per_mb_per_seq: dict[str, float]
    activation_unit: dict[str, float]  # bytes for b = 1 and one micro-batch in flight


@lru_cache(maxsize=1024)
def bubble_coefficients(schedule: str, p: int, v: int) -> tuple[float, float, float]:
    """closed_form's bubble is a_f t_f + a_b t_b + a_w t_w for a schedule, p and v."""
    if p == 1:
        return 0.0, 0.0, 0.0

    def bubble(tf: float, tb: float, tw: float) -> float:
        setup = PipelineSetup(schedule, p, p, v, tf, tb, tw)  # type: ignore[arg-type]
        return closed_form(setup).bubble_time

    base = bubble(1, 1, 1)
    return bubble(2, 1, 1) - base, bubble(1, 2, 1) - base, bubble(1, 1, 2) - base


class Costs:
    """Per-request caches: a grid per degree split, ZeRO states and DP comm per (split, ZeRO),
    and the calculators' reports they are read from."""

    def __init__(self, request: PlanRequest) -> None:
        self.req = request
        cfg = request.model
        counts = count_params(cfg)
        per_layer = (
            counts.attention
            + counts.mlp
            + counts.shared_experts
            + counts.router
            + counts.top_k * counts.one_expert
        )
        self.layer_params = per_layer
        self.logit_params = cfg.vocab * cfg.hidden
        self.d_attn = cfg.heads * cfg.dim_per_head
        self.speed = peak_flops(request.cluster.accelerator, request.dtype) * request.efficiency
        self.peak = peak_flops(request.cluster.accelerator, request.dtype)
        self.model_flops_per_token = self.flops(cfg.layers, self.logit_params, "none")
        self.grids: dict[Degrees, Grid] = {}
        self.states: dict[tuple[Degrees, int, bool], tuple[float, float, float, float]] = {}
        # app.calc.training's reports with one micro-batch of one sequence: the activations
        # per (dp, tp, pp, cp, sp) and recompute mode, the rest per (ZeRO group, ZeRO option)
        self.activations: dict[tuple[int, int, int, int, bool], dict[str, Term]] = {}
        self.shared: dict[tuple[tuple[int, int, int, int, bool], int, bool], MemoryReport] = {}
        # DP seconds of one and of two micro-batches per (ZeRO group, ZeRO stage)
        self.dp_seconds: dict[tuple[tuple[int, int, int, int, bool], int], tuple[float, float]]
        self.dp_seconds = {}

    def flops(self, layers: int, logit: float, recompute: str) -> float:
        return training_flops_per_token(
            self.layer_params, layers, logit, self.req.seq_len, self.d_attn, recompute
        )

    def _comm_layout(self, d: Degrees, zero: int, b: int, m: int) -> CommLayout:
        return CommLayout(
            model=self.req.model, dp=d.dp, tp=d.tp, pp=d.pp, ep=d.ep, cp=d.cp, zero_stage=zero,
            sequence_parallel=d.sp, seq_len=self.req.seq_len, micro_batch=b, microbatches=m,
        )  # fmt: skip

    def grid(self, d: Degrees) -> Grid:
        if d in self.grids:
            return self.grids[d]
        req = self.req
        layers = math.ceil(req.model.layers / d.pp)
        logit = self.logit_params / d.pp
        share = req.seq_len / (d.tp * d.cp) / self.speed  # seconds per FLOP-per-token
        none = self.flops(layers, logit, "none")
        forward = none / 3 * share
        recompute = {r: (self.flops(layers, logit, r) - none) * share for r in RECOMPUTE}
        # Attention core: the selective recompute's extra forward, times 3 for fwd + bwd.
        core = 3 * recompute["selective"]
        lay = Layout(dp=d.dp, tp=d.tp, pp=d.pp, cp=d.cp, ep=d.ep, sequence_parallel=d.sp)
        links = placement(req, lay)
        # The ZeRO stage changes the DP collectives only, and those read neither b nor cp
        # (_zero_group): the grid runs with a stage whose DP time its ZeRO group still lacks
        # and keeps that time, which spares zero_terms most of its own calls.
        group = _zero_group(d)
        stage = next((z for z in range(4) if (group, z) not in self.dp_seconds), 0)
        t11 = comm_seconds(req, self._comm_layout(d, stage, 1, 1), links)
        t22 = comm_seconds(req, self._comm_layout(d, stage, 2, 2), links)
        self.dp_seconds.setdefault((group, stage), (t11["dp"], t22["dp"]))
        # These strategies run the same collectives once per micro-batch, so two micro-batches
        # take twice one to the last bit (doubling a float is exact): no third call for m = 2.
        t12 = {k: 2 * t11[k] for k in PER_MICRO_BATCH}
        per_seq = {k: (t22[k] - t12[k]) / 2 for k in PER_MICRO_BATCH}
        latency = {k: t12[k] - t11[k] - per_seq[k] for k in PER_MICRO_BATCH}
        activation = {r: term.gpu_bytes for r, term in self._activations(d).items()}
        grid = Grid(d, links, forward, recompute, core, latency, per_seq, activation)
        self.grids[d] = grid
        return grid

    def _activations(self, d: Degrees) -> dict[str, Term]:
        """The activation term per recompute mode: app.calc.activations knows no ep, so every
        ep of a (tp, pp, cp) split shares them."""
        key = (d.dp, d.tp, d.pp, d.cp, d.sp)
        if key not in self.activations:
            self.activations[key] = {
                r: self._report(Layout(d.dp, d.tp, d.pp, d.cp, 1, recompute=r,
                                       sequence_parallel=d.sp)).term("activations")
                for r in RECOMPUTE
            }  # fmt: skip
        return self.activations[key]

    def _report(self, lay: Layout) -> MemoryReport:
        return training_memory(training_setup(self.req, lay))

    def zero_terms(self, d: Degrees, zero: int, dist: bool) -> tuple[float, float, float, float]:
        """(model-state bytes, other bytes, DP seconds per step, DP seconds per micro-batch)."""
        key = (d, zero, dist)
        if key in self.states:
            return self.states[key]
        group = _zero_group(d)
        if (group, zero, dist) not in self.shared:
            self.shared[group, zero, dist] = self._report(_folded(d, zero, dist))
        shared = self.shared[group, zero, dist]
        own = self._activations(d)["none"]
        report = replace(shared, terms=[own if t.key == own.key else t for t in shared.terms])
        states = report.model_states_gpu_bytes
        other = report.gpu_bytes - states - report.term("activations").gpu_bytes
        # The distributed optimizer communicates like ZeRO-1 (reduce-scatter + all-gather).
        stage = 1 if dist else zero
        if (group, stage) not in self.dp_seconds:
            folded = _folded(d, stage, False)
            links = placement(self.req, folded)
            t1, t2 = (
                comm_seconds(self.req, self._comm_layout(degrees_of(folded), stage, 1, m),
                             links)["dp"]
                for m in (1, 2)
            )  # fmt: skip
            self.dp_seconds[group, stage] = (t1, t2)
        t1, t2 = self.dp_seconds[group, stage]
        result = (states, other, 2 * t1 - t2, t2 - t1)
        self.states[key] = result
        return result

    def numbers(
        self,
        g: Grid,
        zero: tuple[float, float, float, float],
        recompute: str,
        b: int,
        m: int,
        schedule: str,
        v: int,
    ) -> tuple[float, float, float, float, float, float, float, float]:
        """The seven StepTime terms and the activation bytes of one layout (step_numbers)."""
        lat, per_seq = g.per_mb_latency, g.per_mb_per_seq
        _, _, dp_step, dp_mb = zero
        found = step_numbers(
            g.forward_s, g.recompute_s[recompute], g.attention_core_s,
            [lat[k] for k in PER_MICRO_BATCH], [per_seq[k] for k in PER_MICRO_BATCH],
            dp_step, dp_mb, g.activation_unit[recompute], b, m,
            bubble_coefficients(schedule, g.degrees.pp, v),
            v if schedule == "interleaved" else 1, in_flight(schedule, g.degrees.pp, m, v),
        )  # fmt: skip
        return tuple(float(x) for x in found)  # type: ignore[return-value]

    def cost(self, lay: Layout) -> LayoutCost:
        """The full cost of a layout that breaks no rule."""
        d = degrees_of(lay)
        g = self.grid(d)
        zero = self.zero_terms(d, lay.zero_stage, lay.distributed_optimizer)
        req, b = self.req, lay.micro_batch
        m = req.global_batch_sequences // lay.dp // b
        *terms, activations = self.numbers(
            g, zero, lay.recompute, b, m, lay.schedule, lay.virtual_stages
        )
        step = StepTime(*terms)
        states, other = zero[0], zero[1]
        memory = states + activations + other
        tokens = req.global_batch_tokens
        model_flops = tokens * self.model_flops_per_token
        hardware_flops = tokens * self.flops(req.model.layers, self.logit_params, lay.recompute)
        total = step.total
        gpus = req.cluster.gpus
        tokens_per_s = tokens / total
        return LayoutCost(
            layout=lay,
            microbatches=m,
            memory_bytes=memory,
            model_states_bytes=states,
            activation_bytes=activations,
            other_bytes=other,
            fits=memory <= req.cluster.gpu_memory_bytes,
            headroom_bytes=req.cluster.gpu_memory_bytes - memory,
            step=step,
            model_flops_per_step=model_flops,
            hardware_flops_per_step=hardware_flops,
            mfu=model_flops / (total * gpus * self.peak),
            hfu=hardware_flops / (total * gpus * self.peak),
            tokens_per_s=tokens_per_s,
            days=req.token_budget / tokens_per_s / SECONDS_PER_DAY,
            placement=g.placement,
            peak_flops=self.peak,
        )


def _zero_group(d: Degrees) -> tuple[int, int, int, int, bool]:
    """What ZeRO's sharding and the DP collectives depend on: the N_d = dp * cp ranks (N_d / ep
    for the experts) that hold the same first-stage weights. app.calc.training reads dp and cp
    apart only for the activations, app.calc.comm_volume's DP calls never: every cp with the
    same dp * cp has the same model states, buffers and DP time."""
    return (d.dp * d.cp, d.tp, d.pp, d.ep, d.sp)


def _folded(d: Degrees, zero: int, dist: bool) -> Layout:
    """`d` with cp folded into dp: the same ZeRO group (_zero_group)."""
    return Layout(dp=d.dp * d.cp, tp=d.tp, pp=d.pp, cp=1, ep=d.ep, zero_stage=zero,
                  distributed_optimizer=dist, sequence_parallel=d.sp)  # fmt: skip


def step_numbers(
    forward_s: Any,
    recompute_s: Any,
    attention_core_s: Any,
    latency: list[Any],
    per_seq: list[Any],
    dp_step_s: Any,
    dp_mb_s: Any,
    activation_unit: Any,
    b: Any,
    m: Any,
    bubble: tuple[Any, Any, Any],
    hops: Any,
    flight: Any,
) -> tuple[Any, ...]:
    """The seven StepTime terms and the activation bytes (module docstring), of one layout or,
    elementwise, of arrays of them: the search passes arrays that broadcast over its knobs.

    latency and per_seq are per PER_MICRO_BATCH strategy, bubble is bubble_coefficients',
    hops the pipeline sends per micro-batch (v when interleaved) and flight in_flight's. The
    search and cost() run the same operations in the same order, so get the same floats to
    the last bit; as with Python's floats, an overflow is inf, not a warning.
    """
    lat_tp, lat_cp, lat_ep, lat_pp = latency
    seq_tp, seq_cp, seq_ep, seq_pp = per_seq
    a_f, a_b, a_w = bubble
    with np.errstate(all="ignore"):
        fwd = b * forward_s
        rec = b * recompute_s
        tp_mb = lat_tp + b * seq_tp
        ep_mb = lat_ep + b * seq_ep
        cp_mb = _positive(lat_cp + b * (seq_cp - attention_core_s))
        exposed_mb = tp_mb + ep_mb + cp_mb
        bubble_s = a_f * (fwd + exposed_mb / 2) + a_b * (fwd + rec + exposed_mb / 2) + a_w * fwd
        pp_s = hops * m * (lat_pp + b * seq_pp)
        window = 3 * fwd
        dp_s = _positive(dp_step_s - window) + m * _positive(dp_mb_s - window)
        activations = activation_unit * b * flight
        return (
            m * 3 * fwd, m * rec, m * tp_mb, m * (cp_mb + ep_mb), pp_s, dp_s, bubble_s,
            activations,
        )  # fmt: skip


def _positive(x: Any) -> Any:
    """max(0.0, x), elementwise; NaN gives 0.0 as max does."""
    return np.where(x > 0.0, x, 0.0)


@lru_cache(maxsize=4096)
def in_flight(schedule: str, pp: int, m: int, v: int) -> float:
    """Micro-batches in flight on the first stage (app.calc.activations); ZB-H1 as 1F1B."""
    if schedule == "zb-h1" or pp == 1:
        return in_flight_microbatches("1f1b", pp, m)
    return in_flight_microbatches(schedule, pp, m, v)  # type: ignore[arg-type]


def evaluate(request: PlanRequest, layout: Layout) -> LayoutCost | Rejected:
    """The cost of one layout, or the first rule it breaks (all of them: `violations`)."""
    broken = violations(request, layout)
    if broken:
        return broken[0]
    return Costs(request).cost(layout)
