"""Pipeline schedules on real ranks: GPipe, 1F1B, interleaved 1F1B and ZB-H1 with
torch.distributed.pipelining, each action timed on every rank (feasibility §7).

The model is 2p chunks of Linear layers (p = world size), the same for every schedule: rank r
runs chunks 2r and 2r+1 as one stage (GPipe, 1F1B, ZB-H1), or chunks r and r+p as two virtual
stages (interleaved, Narayanan et al. SC'21 §2.2.2). ZB-H1 is torch's
ScheduleInterleavedZeroBubble with one stage per rank: its order then is Qi et al.'s ZB-H1
(stage i holds back its first i weight gradients), the order app.calc.pipeline simulates.
Interleaved 1F1B is torch's ScheduleInterleaved1F1B, whose order at m = p is not Megatron-LM's;
the page simulates torch's (PipelineSetup.interleaved_order).

Each schedule runs one unmeasured step (torch exchanges tensor shapes on the first one), one
counted step (its p2p ops and wire bytes, probes on), then one clean step that gives the
timeline, since the counter would slow every op in it. Every stage action is timed by wrapping
the stage's forward_one_chunk, backward_one_chunk and backward_weight_one_chunk with
perf_counter_ns (CLOCK_MONOTONIC, so comparable across the ranks of one host). In `fixed` mode
each chunk sleeps in its forward, in its input-gradient backward and in its weight-gradient
backward, so F, B and W take set times whichever schedule calls them; sleeping uses no CPU, so
four ranks overlap on two cores. The gradients of the clean step are checked against one
process running the whole model on the whole batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch
from torch import nn
from torch.nn import functional

from app.calc.pipeline import Schedule, timeline_summary
from demos.probes import RankInfo, count_then_time
from demos.specs.pipeline_schedules import (
    CHUNKS_PER_RANK,
    LAYERS_PER_CHUNK,
    PipelineSchedulesParams,
    p2p_count,
    timeline_blocks,
)

WARMUP: dict[str, Any] = {
    "schedule": "all",
    "compute": "fixed",
    "microbatches": 4,
    "forward_ms": 1,
    "backward_ms": 2,
    "hidden": 8,
    "microbatch_size": 1,
}
PRELOAD: tuple[str, ...] = ("torch.distributed.pipelining",)

MODEL_SEED = 1234
DATA_SEED = 99
# float32 sums over different micro-batch orders: agreement to rounding, not bit for bit.
GRAD_RTOL = 1e-4
GRAD_ATOL = 1e-6


class _SleepInBackward(torch.autograd.Function):
    """Identity that sleeps `forward_s` in forward and `backward_s` in backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, forward_s: float, backward_s: float) -> torch.Tensor:
        ctx.backward_s = backward_s
        if forward_s:
            time.sleep(forward_s)
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        if ctx.backward_s:
            time.sleep(ctx.backward_s)
        return grad, None, None


class TimedLinear(nn.Linear):
    """A Linear layer whose forward, input gradient and weight gradient take set times.

    The input-gradient sleep sits on the output, which every gradient flows through; the
    weight-gradient sleep sits on the weight, which only the weight gradient reaches. So a
    full backward sleeps both, torch's split backward sleeps one in B and the other in W.
    """

    def __init__(self, width: int, f_s: float = 0.0, b_s: float = 0.0, w_s: float = 0.0) -> None:
        super().__init__(width, width)
        self.f_s, self.b_s, self.w_s = f_s, b_s, w_s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = _SleepInBackward.apply(self.weight, 0.0, self.w_s) if self.w_s else self.weight
        out = functional.linear(x, weight, self.bias)
        if self.f_s or self.b_s:
            out = _SleepInBackward.apply(out, self.f_s, self.b_s)
        return out


def build_chunk(index: int, params: PipelineSchedulesParams, timed: bool) -> nn.Sequential:
    """Chunk `index` of the model, identical on every rank (seeded by its index)."""
    torch.manual_seed(MODEL_SEED + index)
    per_chunk_s = 1e-3 / CHUNKS_PER_RANK
    layers: list[nn.Module] = []
    for layer in range(LAYERS_PER_CHUNK):
        sleeps = (0.0, 0.0, 0.0)
        if timed and layer == 0:
            half = params.backward_ms / 2
            sleeps = (params.forward_ms * per_chunk_s, half * per_chunk_s, half * per_chunk_s)
        layers += [TimedLinear(params.hidden, *sleeps), nn.Tanh()]
    return nn.Sequential(*layers)


def batch(params: PipelineSchedulesParams, device: torch.device) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(DATA_SEED)
    rows = params.microbatches * params.microbatch_size
    x = torch.randn(rows, params.hidden, generator=generator)
    target = torch.randn(rows, params.hidden, generator=generator)
    return x.to(device), target.to(device)


def reference_grads(
    params: PipelineSchedulesParams, world_size: int, device: torch.device
) -> list[list[torch.Tensor]]:
    """Every chunk's gradients from one process running the whole model on the whole batch.

    The schedules average the micro-batches' MSE losses (scale_grads), which for equal
    micro-batches is the MSE over the whole batch.
    """
    chunks = [
        build_chunk(k, params, timed=False).to(device) for k in range(CHUNKS_PER_RANK * world_size)
    ]
    x, target = batch(params, device)
    functional.mse_loss(nn.Sequential(*chunks)(x), target).backward()
    return [[p.grad.detach().clone() for p in chunk.parameters()] for chunk in chunks]


def _timed(stage: Any, chunk: int, log: list[list[Any]], sync: Callable[[], None]) -> None:
    """Wrap the stage's compute methods so each call appends [kind, mb, chunk, start, end]."""
    forward, backward = stage.forward_one_chunk, stage.backward_one_chunk
    backward_weight = stage.backward_weight_one_chunk

    def record(kind: str, microbatch: int, start_ns: int) -> None:
        sync()
        log.append([kind, microbatch, chunk, start_ns / 1e6, time.perf_counter_ns() / 1e6])

    def forward_one_chunk(fwd_chunk_id: int, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        out = forward(fwd_chunk_id, *args, **kwargs)
        record("F", fwd_chunk_id, start)
        return out

    def backward_one_chunk(bwd_chunk_id: int, *args: Any, **kwargs: Any) -> Any:
        full = kwargs.get("full_backward", args[1] if len(args) > 1 else True)
        start = time.perf_counter_ns()
        out = backward(bwd_chunk_id, *args, **kwargs)
        record("BW" if full else "B", bwd_chunk_id, start)
        return out

    def backward_weight_one_chunk(bwd_chunk_id: int, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        out = backward_weight(bwd_chunk_id, *args, **kwargs)
        record("W", bwd_chunk_id, start)
        return out

    stage.forward_one_chunk = forward_one_chunk
    stage.backward_one_chunk = backward_one_chunk
    stage.backward_weight_one_chunk = backward_weight_one_chunk


def _schedule(
    name: Schedule, rank: RankInfo, params: PipelineSchedulesParams, log: list[list[Any]]
) -> tuple[Any, list[tuple[int, nn.Module]]]:
    """The torch schedule for `name` on this rank and its (chunk index, module) pairs."""
    from torch.distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleGPipe,
        ScheduleInterleaved1F1B,
        ScheduleInterleavedZeroBubble,
    )

    p, r = rank.world_size, rank.rank
    timed = params.compute == "fixed"
    if name == "interleaved":
        owned = [(c * p + r, build_chunk(c * p + r, params, timed)) for c in range(2)]
        stages = []
        for c, (index, module) in enumerate(owned):
            stage = PipelineStage(module.to(rank.device), index, 2 * p, rank.device)
            _timed(stage, c, log, rank.sync)
            stages.append(stage)
        sched = ScheduleInterleaved1F1B(stages, params.microbatches, loss_fn=functional.mse_loss)
        return sched, owned
    owned = [(2 * r + c, build_chunk(2 * r + c, params, timed)) for c in range(2)]
    module = nn.Sequential(*(m for _, m in owned)).to(rank.device)
    stage = PipelineStage(module, r, p, rank.device)
    _timed(stage, 0, log, rank.sync)
    if name == "zb-h1":
        sched = ScheduleInterleavedZeroBubble([stage], params.microbatches, functional.mse_loss)
    elif name == "1f1b":
        sched = Schedule1F1B(stage, params.microbatches, loss_fn=functional.mse_loss)
    else:
        sched = ScheduleGPipe(stage, params.microbatches, loss_fn=functional.mse_loss)
    return sched, owned


def _step(sched: Any, rank: RankInfo, x: torch.Tensor, target: torch.Tensor) -> None:
    args = (x,) if rank.rank == 0 else ()
    if rank.rank == rank.world_size - 1:
        sched.step(*args, target=target, losses=[])
    else:
        sched.step(*args)


def _restart(owned: list[tuple[int, nn.Module]], log: list[list[Any]]) -> None:
    """Before a step: no gradients, no actions logged (the log keeps the clean step's)."""
    for _, module in owned:
        module.zero_grad(set_to_none=True)
    log.clear()


def _grad_error(owned: list[tuple[int, nn.Module]], reference: list[list[torch.Tensor]]) -> float:
    worst = 0.0
    for index, module in owned:
        for param, expected in zip(module.parameters(), reference[index], strict=True):
            if param.grad is None:
                return float("inf")
            diff = (param.grad - expected).abs() - GRAD_RTOL * expected.abs()
            worst = max(worst, float(diff.max()))
    return worst


def run(rank: RankInfo, params: PipelineSchedulesParams) -> Iterator[dict[str, Any]]:
    """One measured training step per schedule, each yielded as this rank's timeline."""
    p = rank.world_size
    runnable = [s for s in params.schedules if not params.problems(s, p)]
    if not runnable:
        problems = params.problems(params.schedules[0], p)
        raise ValueError(f"{params.schedules[0]} on {p} ranks: {'; '.join(problems)}")
    reference = reference_grads(params, p, rank.device)
    x, target = batch(params, rank.device)
    for name in runnable:
        log: list[list[Any]] = []
        sched, owned = _schedule(name, rank, params, log)
        _step(sched, rank, x, target)  # first step: shapes are exchanged, buffers made
        counted, _ = count_then_time(
            partial(_step, sched, rank, x, target), rank, prepare=partial(_restart, owned, log)
        )
        error = _grad_error(owned, reference)
        yield {
            **counted.as_dict(rank.rank),
            "schedule": name,
            "actions": log,
            "grad_error": error,
            "correct": error <= GRAD_ATOL,
        }


def summary(
    params: PipelineSchedulesParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per schedule: measured step time, bubble, peak in flight and p2p traffic per rank."""
    schedules = []
    for event in measurements:
        ranks = sorted(event["ranks"], key=lambda r: r["rank"])
        name = ranks[0]["schedule"]
        measured = timeline_summary(params.setup(name, world_size), timeline_blocks(ranks))
        schedules.append(
            {
                "schedule": name,
                "step_ms": measured.total_time,
                "busy_ms": measured.busy_time,
                "bubble_fraction": measured.bubble_fraction_of_total,
                "peak_in_flight": measured.peak_in_flight,
                "sends": [p2p_count(r, "send")[0] for r in ranks],
                "send_bytes": [p2p_count(r, "send")[1] for r in ranks],
                "recvs": [p2p_count(r, "recv")[0] for r in ranks],
                "wire_bytes": [r["wire_bytes"] for r in ranks],
                "grad_error": max(r["grad_error"] for r in ranks),
            }
        )
    ran = {s["schedule"] for s in schedules}
    skipped = {
        name: "; ".join(params.problems(name, world_size))
        for name in params.schedules
        if name not in ran
    }
    return {
        "world_size": world_size,
        "schedules": schedules,
        "skipped": skipped,
        "correct": all(event["correct"] for event in measurements),
    }
