"""What a layout costs: memory per GPU from app.calc.training (on
app.calc.planner.memory_setup's setup), FLOPs from app.calc.flops, communication from
app.calc.planner.comm_costs, the step's terms from app.calc.planner.step_formulas.

The modelling choices are in app.calc.planner's docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from app.calc.activations import stage_activations
from app.calc.comm_volume import CommLayout, bucket_elements, stage_params
from app.calc.flops import SECONDS_PER_DAY, training_flops_per_token
from app.calc.hardware import peak_flops
from app.calc.model import count_params
from app.calc.performance import hardware
from app.calc.planner.comm_costs import comm_seconds, communicator_bytes, placement
from app.calc.planner.memory_setup import training_setup
from app.calc.planner.request import RECOMPUTE, Layout, PlanRequest
from app.calc.planner.results import LayoutCost, Placement, Rejected, StepTime
from app.calc.planner.rules import Degrees, degrees_of, violations
from app.calc.planner.step_formulas import (
    PER_MICRO_BATCH,
    StageSplit,
    StageWork,
    bubble_coefficients,
    in_flight,
    slowest_stage,
    stage_work,
    step_numbers,
)
from app.calc.planner.work import PassWork, embedding_pass, head_pass, layer_pass
from app.calc.precision import bytes_per_param
from app.calc.training import training_memory
from app.calc.training_measured import loss_extra_bytes
from app.calc.training_types import MODEL_STATE_KEYS, MemoryReport, Term

# The memory calculator's answers depend on the layout alone, not on the performance profile:
# kept across requests, so that a calibration's thousands of evaluations of the same runs
# under different profiles compute each once.
_training_memory = lru_cache(maxsize=8192)(training_memory)


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


def evaluate(request: PlanRequest, layout: Layout) -> LayoutCost | Rejected:
    """The cost of one layout, or the first rule it breaks (all of them: `violations`)."""
    broken = violations(request, layout)
    if broken:
        return broken[0]
    return Costs(request).cost(layout)
