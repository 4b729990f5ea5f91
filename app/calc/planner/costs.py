"""What a layout costs: memory per GPU from app.calc.training, FLOPs from app.calc.flops,
communication from app.calc.comm_volume on app.calc.links, the bubble from app.calc.pipeline.

The modelling choices are in app.calc.planner's docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from app.calc.activations import (
    ActivationSetup,
    in_flight_microbatches,
    stage_activations,
)
from app.calc.comm_volume import (
    DTYPE_BYTES,
    CommLayout,
    bucket_elements,
    stage_params,
    strategy_calls,
)
from app.calc.flops import SECONDS_PER_DAY, training_flops_per_token
from app.calc.hardware import peak_flops
from app.calc.links import Link, alpha_beta_time
from app.calc.model import count_params
from app.calc.performance import PerformanceProfile, hardware
from app.calc.pipeline import PipelineSetup, closed_form
from app.calc.planner.request import PLACEMENT_ORDER, RECOMPUTE, Cluster, Layout, PlanRequest
from app.calc.planner.results import LayoutCost, Placement, Rejected, StepTime
from app.calc.planner.rules import Degrees, degrees_of, violations
from app.calc.planner.work import PassWork, embedding_pass, head_pass, layer_pass
from app.calc.precision import bytes_per_param
from app.calc.training import (
    MODEL_STATE_KEYS,
    MemoryReport,
    Parallelism,
    Term,
    TrainingSetup,
    communicators,
    loss_extra_bytes,
    training_memory,
)


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
            distribute_saved=request.distribute_saved_activations,
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


# The calculators' answers depend on the layout alone, not on the performance profile: kept
# across requests, so that a calibration's thousands of evaluations of the same runs under
# different profiles compute each once.
_strategy_calls = lru_cache(maxsize=16384)(strategy_calls)
_training_memory = lru_cache(maxsize=8192)(training_memory)


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


PER_MICRO_BATCH = ("tp", "cp", "ep", "pp")  # strategies that communicate every micro-batch


@dataclass(frozen=True)
class StageSplit:
    """Which stage sets the pipeline's pace: its layers, and whether it holds the output layer
    and loss (the last stage) or the embedding (the first)."""

    layers: int
    head: bool
    embedding: bool


def slowest_stage(layers: int, pp: int, layer_s: float, head_s: float, uneven: bool) -> StageSplit:
    """The stage whose micro-batch takes longest, the layers split as the framework would.

    Equal stages (Megatron-LM's rule, pp dividing the layers): L/p each, and the last stage
    also runs the output layer and the loss. Uneven stages (Megatron-DeepSpeed's partitioning,
    Llama 3's Section 3.3.2, which moves a layer off the first and last stages): the split
    whose slowest stage is fastest, the last stage taking k layers and the others the rest.
    """
    if pp == 1:
        return StageSplit(layers, True, True)
    if not uneven:
        return StageSplit(math.ceil(layers / pp), True, False)
    best: tuple[float, StageSplit] | None = None
    for k in range(0, math.ceil(layers / pp) + 1):
        rest = math.ceil((layers - k) / (pp - 1))
        last, other = k * layer_s + head_s, rest * layer_s
        split = StageSplit(k, True, False) if last >= other else StageSplit(rest, False, True)
        slowest = max(last, other)
        if best is None or slowest < best[0]:
            best = (slowest, split)
    assert best is not None
    return best[1]


@dataclass(frozen=True)
class StageWork:
    """One micro-batch of b sequences on the slowest stage, seconds: GEMMs and attention
    (forward and backward), memory-bound kernels, fixed costs, the attention core alone (what
    CP's ring hides behind) and the recomputation, selective and full."""

    compute: float
    memory: float
    fixed: float
    attention: float
    selective: float
    full: float

    def recompute(self, mode: str) -> float:
        return {"none": 0.0, "selective": self.selective, "full": self.full}[mode]


# pass_table's columns, per pass (a layer, the loss, the embedding)
PASS_COLUMNS = ("compute", "memory", "kernels", "attention", "selective", "full")


def stage_work(
    table: Any, layers: Any, head: Any, embedding: Any, kernel_s: float, microbatch_s: float
) -> tuple[Any, ...]:
    """StageWork's numbers from pass tables (Costs.pass_table: the last two axes, passes by
    PASS_COLUMNS) and a stage's layers, loss (1 or 0) and embedding (1 or 0), of one stage
    or, elementwise, of arrays of them: the search and Costs.work run the same operations in
    the same order."""
    layer, loss, embed = table[..., 0, :], table[..., 1, :], table[..., 2, :]

    def stage(column: int) -> Any:
        return (
            layers * layer[..., column] + head * loss[..., column] + embedding * embed[..., column]
        )

    kernels = stage(2)
    return (
        stage(0), stage(1), kernels * kernel_s + microbatch_s, layers * layer[..., 3],
        layers * layer[..., 4], layers * layer[..., 5],
    )  # fmt: skip


@dataclass(frozen=True)
class Grid:
    """What one (dp, tp, pp, cp, ep, sp) split costs, before ZeRO, recompute, b and schedule."""

    degrees: Degrees
    placement: Placement
    split: StageSplit
    comm_scale: float  # the slowest stage's layers over comm_volume's ceil(L/p)
    # per micro-batch seconds = c1 + c2 * b, for tp, cp, ep, pp
    per_mb_latency: dict[str, float]
    per_mb_per_seq: dict[str, float]
    # bytes for b = 1 and one micro-batch in flight, per recompute mode
    activation_unit: dict[str, float]
    last_stage_unit: dict[str, float]  # the last stage's activations, 1 micro-batch in flight
    loss_unit: float  # the loss's temporaries beyond an fp32 copy of the logits, b = 1
    works: dict[int, StageWork]  # per micro-batch size, filled on demand (Costs.work)


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
        self.peak = peak_flops(request.cluster.accelerator, request.dtype)
        acc = request.cluster.accelerator
        self.hw = hardware(request.profile, self.peak, request.efficiency, acc.hbm_bytes_per_s)
        self.model_flops_per_token = self.flops(cfg.layers, self.logit_params, "none")
        self.grids: dict[Degrees, Grid] = {}
        self.states: dict[tuple[Degrees, int, bool],
                          tuple[float, float, float, float, float, float]]  # fmt: skip
        self.states = {}
        # app.calc.training's reports with one micro-batch of one sequence: the activations
        # per (dp, tp, pp, cp, sp) and recompute mode, the rest per (ZeRO group, ZeRO option)
        self.activations: dict[tuple[int, int, int, int, bool], dict[str, Term]] = {}
        self.shared: dict[tuple[tuple[int, int, int, int, bool], int, bool],
                          tuple[float, float, float]] = {}  # fmt: skip
        # DP seconds of one and of two micro-batches per (ZeRO group, ZeRO stage), and the
        # last bucket's share of the gradients
        self.dp_seconds: dict[tuple[tuple[int, int, int, int, bool], int],
                              tuple[float, float, float]]  # fmt: skip
        self.dp_seconds = {}
        # per-micro-batch comm (Grid's latency, per_seq) by what it depends on (grid())
        self.per_mb: dict[tuple, tuple[dict[str, float], dict[str, float]]] = {}
        self.last_units: dict[tuple, dict[str, float]] = {}
        self.tables: dict[tuple[int, bool, int, int, int], np.ndarray] = {}

    def flops(self, layers: int, logit: float, recompute: str) -> float:
        return training_flops_per_token(
            self.layer_params, layers, logit, self.req.seq_len, self.d_attn, recompute
        )

    def _comm_layout(self, d: Degrees, zero: int, b: int, m: int) -> CommLayout:
        return CommLayout(
            model=self.req.model, dp=d.dp, tp=d.tp, pp=d.pp, ep=d.ep, cp=d.cp, zero_stage=zero,
            sequence_parallel=d.sp, seq_len=self.req.seq_len, micro_batch=b, microbatches=m,
        )  # fmt: skip

    def _passes(self, d: Degrees, b: int) -> tuple[PassWork, PassWork, PassWork]:
        """A layer's, the loss's and the embedding's work (app.calc.planner.work, cached
        there): they read neither dp nor pp."""
        req = self.req
        cfg, s = req.model, req.seq_len
        return (
            layer_pass(cfg, s, b, d.tp, d.sp, d.cp, d.ep, req.flash_attention, req.dropout,
                       self.hw),
            head_pass(cfg, s, b, d.tp, d.sp, d.cp, self.hw),
            embedding_pass(cfg, s, b, d.tp, d.cp, self.hw),
        )  # fmt: skip

    def _pass_s(self, work: PassWork) -> float:
        return work.compute_s + work.memory_s + work.kernels * self.hw.kernel_s

    def grid(self, d: Degrees) -> Grid:
        if d in self.grids:
            return self.grids[d]
        req = self.req
        layer, head, _ = self._passes(d, 1)
        split = slowest_stage(req.model.layers, d.pp, self._pass_s(layer), self._pass_s(head),
                              req.uneven_pipeline)  # fmt: skip
        lay = Layout(dp=d.dp, tp=d.tp, pp=d.pp, cp=d.cp, ep=d.ep, sequence_parallel=d.sp)
        links = placement(req, lay)
        # TP, CP and PP collectives read neither dp, ep nor the ZeRO stage, only the links
        # they run over; EP's read ep too: one pair of calls per such key serves every split
        # that shares it.
        latency: dict[str, float] = {}
        per_seq: dict[str, float] = {}
        for strategies, key in (
            (("tp", "cp", "pp"), (d.tp, d.pp, d.cp, d.sp, links.tp, links.cp, links.pp)),
            (("ep",), (d.tp, d.pp, d.cp, d.ep, d.sp, links.ep)),
        ):
            if key not in self.per_mb:
                t11 = comm_seconds(req, self._comm_layout(d, 0, 1, 1), links, strategies)
                t22 = comm_seconds(req, self._comm_layout(d, 0, 2, 2), links, strategies)
                # These strategies run the same collectives once per micro-batch, so two
                # micro-batches take twice one to the last bit (doubling a float is exact):
                # no third call for m = 2.
                t12 = {k: 2 * t11[k] for k in strategies}
                seq = {k: (t22[k] - t12[k]) / 2 for k in strategies}
                self.per_mb[key] = ({k: t12[k] - t11[k] - seq[k] for k in strategies}, seq)
            latency.update(self.per_mb[key][0])
            per_seq.update(self.per_mb[key][1])
        activation = {r: term.gpu_bytes for r, term in self._activations(d).items()}
        last_key = (d.tp, d.pp, d.cp, d.sp, split)
        if last_key not in self.last_units:
            self.last_units[last_key] = {r: self._last_stage_unit(d, split, r) for r in RECOMPUTE}
        last = self.last_units[last_key]
        loss = loss_extra_bytes(req.seq_len / d.cp, req.model.vocab, d.tp, req.profile.logit_bytes)
        scale = split.layers / math.ceil(req.model.layers / d.pp)
        grid = Grid(d, links, split, scale, latency, per_seq, activation, last, loss, {})
        self.grids[d] = grid
        return grid

    def pass_table(self, d: Degrees, b: int) -> np.ndarray:
        """A layer's, the loss's and the embedding's work for micro-batch b (rows), as
        PASS_COLUMNS: the numbers stage_work combines, for one stage or for arrays of them."""
        key = (d.tp, d.sp, d.cp, d.ep, b)
        if key not in self.tables:
            hw = self.hw
            self.tables[key] = np.array(
                [[w.compute_s, w.memory_s, w.kernels, w.attention_fwd_s + w.attention_bwd_s,
                  w.selective_s(hw), w.full_s(hw)] for w in self._passes(d, b)]
            )  # fmt: skip
        return self.tables[key]

    def work(self, g: Grid, b: int) -> StageWork:
        """The slowest stage's micro-batch of b sequences (StageWork)."""
        if b not in g.works:
            split = g.split
            g.works[b] = StageWork(
                *(float(x) for x in stage_work(
                    self.pass_table(g.degrees, b), split.layers, float(split.head),
                    float(split.embedding), self.hw.kernel_s,
                    self.req.profile.microbatch_overhead_s,
                ))
            )  # fmt: skip
        return g.works[b]

    def _last_stage_unit(self, d: Degrees, split: StageSplit, recompute: str) -> float:
        """Bytes per sequence the last stage holds at the loss, one micro-batch in flight: its
        layers' activations, the output layer's inputs and an fp32 copy of the logits
        (app.calc.activations; Grid.loss_unit adds the loss's own temporaries)."""
        req = self.req
        layers = req.model.layers - (d.pp - 1) * math.ceil(req.model.layers / d.pp)
        if d.pp > 1 and split.head:
            layers = split.layers
        # Values in the precision the forward runs in, as app.calc.training keeps them.
        value = max(2, int(bytes_per_param(req.recipe, req.optimizer).weights))
        setup = replace(
            training_setup(req, Layout(d.dp, d.tp, d.pp, d.cp, d.ep, recompute=recompute,
                                       sequence_parallel=d.sp)).activations,
            tp=d.tp, cp=d.cp, bytes_per_value=value,
        )  # fmt: skip
        return stage_activations(req.model, setup, max(layers, 0), 1.0, d.pp == 1, True).total

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
        return _training_memory(training_setup(self.req, lay))

    def zero_terms(
        self, d: Degrees, zero: int, dist: bool
    ) -> tuple[float, float, float, float, float, float]:
        """(model-state bytes, other bytes, DP seconds per step, DP seconds per micro-batch,
        the optimizer step's seconds, the per-step DP seconds of the last bucket)."""
        key = (d, zero, dist)
        if key in self.states:
            return self.states[key]
        group = _zero_group(d)
        if (group, zero, dist) not in self.shared:
            self.shared[group, zero, dist] = self._shared_terms(d, zero, dist)
        states, rest, optimizer_s = self.shared[group, zero, dist]
        # Everything but the model states and the activations (buffers, the CUDA context),
        # and NCCL's buffers, which read the split's own groups.
        other = rest + communicator_bytes(self.req.profile, d)
        # The distributed optimizer communicates like ZeRO-1 (reduce-scatter + all-gather).
        stage = 1 if dist else zero
        if (group, stage) not in self.dp_seconds:
            layout = _folded(d, stage, False)
            folded, links = degrees_of(layout), placement(self.req, layout)
            one, two = (self._comm_layout(folded, stage, 1, m) for m in (1, 2))
            t1, t2 = (comm_seconds(self.req, c, links, ("dp",))["dp"] for c in (one, two))
            # The backward hands its gradients over bucket by bucket, and the last bucket's
            # collectives start only when it ends: that share of the per-step traffic cannot
            # overlap compute (step_numbers), and it grows with the DP size (bucket_elements).
            params = sum(stage_params(one))
            last = min(1.0, bucket_elements(folded.dp) / params) if params else 1.0
            self.dp_seconds[group, stage] = (t1, t2, last)
        t1, t2, last = self.dp_seconds[group, stage]
        per_step = 2 * t1 - t2
        result = (states, other, per_step, t2 - t1, optimizer_s, last * per_step)
        self.states[key] = result
        return result

    def _shared_terms(self, d: Degrees, zero: int, dist: bool) -> tuple[float, float, float]:
        """What every split of a ZeRO group shares: its model-state bytes, the bytes of every
        term but the model states and the activations, and the optimizer step's seconds."""
        report = self._report(_folded(d, zero, dist))
        states = report.model_states_gpu_bytes
        rest = sum(t.gpu_bytes for t in report.terms
                   if t.key not in MODEL_STATE_KEYS and t.key != "activations")  # fmt: skip
        # Adam reads and writes the master weights and both moments, reads the gradients and
        # writes the 16-bit weights: every byte of those terms once or twice (memory-bound).
        moved = sum(
            report.term(key).gpu_bytes * times
            for key, times in (("master", 2), ("optimizer", 2), ("grads", 1), ("weights", 1))
        )
        return states, rest, moved / self.hw.hbm_bytes_per_s

    def numbers(
        self,
        g: Grid,
        zero: tuple[float, float, float, float, float, float],
        recompute: str,
        b: int,
        m: int,
        schedule: str,
        v: int,
    ) -> tuple[float, ...]:
        """The StepTime terms and the memory of one layout (step_numbers)."""
        lat, per_seq = g.per_mb_latency, g.per_mb_per_seq
        states, other, dp_step, dp_mb, optimizer_s, dp_tail = zero
        w = self.work(g, b)
        prof = self.req.profile
        found = step_numbers(
            w.compute, w.memory, w.fixed, w.recompute(recompute), w.attention,
            [lat[k] for k in PER_MICRO_BATCH], [per_seq[k] for k in PER_MICRO_BATCH],
            g.comm_scale, dp_step, dp_mb, dp_tail, optimizer_s,
            g.activation_unit[recompute], g.last_stage_unit[recompute], g.loss_unit,
            states + other,
            b, m, bubble_coefficients(schedule, g.degrees.pp, v),
            v if schedule == "interleaved" else 1, in_flight(schedule, g.degrees.pp, m, v),
            prof.overlap_slowdown, prof.dp_overlap, prof.step_overhead_s,
            prof.allocator_fraction,
        )  # fmt: skip
        return tuple(float(x) for x in found)

    def cost(self, lay: Layout) -> LayoutCost:
        """The full cost of a layout that breaks no rule."""
        d = degrees_of(lay)
        g = self.grid(d)
        zero = self.zero_terms(d, lay.zero_stage, lay.distributed_optimizer)
        req, b = self.req, lay.micro_batch
        m = req.global_batch_sequences // lay.dp // b
        *terms, activations, loss, allocator, memory = self.numbers(
            g, zero, lay.recompute, b, m, lay.schedule, lay.virtual_stages
        )
        step = StepTime(*terms)
        states, other = zero[0], zero[1]
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
            loss_bytes=loss,
            allocator_bytes=allocator,
        )


def communicator_bytes(profile: PerformanceProfile, d: Degrees) -> float:
    """NCCL's buffers: one communicator per parallel group of more than one GPU (two for the
    pipeline's sends to the previous and the next stage)."""
    return profile.nccl_bytes * communicators(d.dp, d.tp, d.pp, d.cp, d.ep)


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
    compute_s: Any,
    memory_s: Any,
    fixed_s: Any,
    recompute_s: Any,
    attention_s: Any,
    latency: list[Any],
    per_seq: list[Any],
    comm_scale: Any,
    dp_step_s: Any,
    dp_mb_s: Any,
    dp_tail_s: Any,
    optimizer_s: Any,
    activation_unit: Any,
    last_stage_unit: Any,
    loss_unit: Any,
    fixed_bytes: Any,
    b: Any,
    m: Any,
    bubble: tuple[Any, Any, Any],
    hops: Any,
    flight: Any,
    overlap_slowdown: float,
    dp_overlap: float,
    step_overhead_s: float,
    allocator_fraction: float,
) -> tuple[Any, ...]:
    """The StepTime terms, then the activation, loss and allocator bytes and the memory per
    GPU, of one layout or, elementwise, of arrays of them: the search passes arrays that
    broadcast over its knobs.

    compute_s ... attention_s are one micro-batch of b sequences on the slowest stage
    (Costs.work); latency and per_seq are per PER_MICRO_BATCH strategy for comm_volume's
    ceil(L/p) layers, comm_scale the slowest stage's share of them (TP, CP and EP run per
    layer); bubble is bubble_coefficients', hops the pipeline sends per micro-batch (v when
    interleaved) and flight in_flight's; dp_tail_s is the share of dp_step_s that waits for
    the backward's end (the last bucket). Communication that overlaps compute costs
    overlap_slowdown of the time it overlaps (_hidden). The search and cost() run the same
    operations in the same order, so get the same floats to the last bit; as with Python's
    floats, an overflow is inf, not a warning.
    """
    lat_tp, lat_cp, lat_ep, lat_pp = latency
    seq_tp, seq_cp, seq_ep, seq_pp = per_seq
    a_f, a_b, a_w = bubble
    with np.errstate(all="ignore"):
        tp_mb = comm_scale * (lat_tp + b * seq_tp)
        ep_mb = comm_scale * (lat_ep + b * seq_ep)
        cp_mb = _hidden(comm_scale * (lat_cp + b * seq_cp), attention_s, overlap_slowdown)
        exposed_mb = tp_mb + ep_mb + cp_mb
        run = compute_s + memory_s + fixed_s
        # One pass's share: the forward a third of the work, the backward's input and weight
        # gradients a third each (Qi et al. arXiv:2401.10241 take T_F = T_B = T_W).
        third = run / 3
        bubble_s = (a_f * (third + exposed_mb / 2) + a_b * (third + recompute_s + exposed_mb / 2)
                    + a_w * third)  # fmt: skip
        # Interleaved schedules overlap their sends with the next chunk's compute
        # (Megatron-Core's overlap_p2p_comm); 1F1B's sends sit on the critical path.
        sends = hops * (lat_pp + b * seq_pp)
        pp_s = m * np.where(hops > 1, _hidden(sends, compute_s, overlap_slowdown), sends)
        window = dp_overlap * (compute_s + memory_s)
        dp_s = (dp_tail_s + _hidden(dp_step_s - dp_tail_s, window, overlap_slowdown)
                + m * _hidden(dp_mb_s, window, overlap_slowdown))  # fmt: skip
        first = activation_unit * b * flight
        last = last_stage_unit * b
        loss_peak = loss_unit * b
        first_peaks = first >= last + loss_peak
        activations = np.where(first_peaks, first, last)
        loss = np.where(first_peaks, 0.0, loss_peak)
        allocated = fixed_bytes + activations + loss
        allocator = allocator_fraction * allocated
        return (
            m * compute_s, m * memory_s + optimizer_s, m * recompute_s, m * tp_mb,
            m * (cp_mb + ep_mb), pp_s, dp_s, bubble_s, m * fixed_s + step_overhead_s,
            activations, loss, allocator, allocated + allocator,
        )  # fmt: skip


def _hidden(comm_s: Any, window_s: Any, slowdown: float) -> Any:
    """The time `comm_s` of communication adds when it may overlap `window_s` of compute: the
    part that does not fit, plus the slow-down of the compute it does overlap."""
    return _positive(comm_s - window_s) + slowdown * np.minimum(_positive(comm_s), window_s)


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
