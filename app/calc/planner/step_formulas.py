"""The formulas of one training step: which pipeline stage is slowest, its micro-batch's
work, and the step time term by term and the memory per GPU from them.

Each formula runs elementwise, on one layout's floats (Costs) or on numpy arrays of many
(the search): the same operations in the same order, so both get the same floats."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from app.calc.activations import in_flight_microbatches
from app.calc.pipeline import PipelineSetup, closed_form

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
