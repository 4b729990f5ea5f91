"""Activation checkpointing on a residual MLP stack: saved bytes down, step time up.

Every rank builds the same stack (same seed) and its own batch, then trains it one step at a
time in each mode: no recompute, every block checkpointed, and segments of k blocks
checkpointed (`torch.utils.checkpoint`, non-reentrant). Each row is a clean step, timed with
no probe on, whose gradients must equal, bit for bit, those of a reference step without
recompute taken before any window, since recompute reruns the same ops on the same inputs.

After it, untimed: a forward under `SavedActivationMeter` counts the bytes autograd saved,
and a step under `LiveBytesTrace` finds the peak of live activation bytes during backward,
recompute included, and the segment it is in.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

from demos.live_bytes import LiveBytesTrace, cuda_allocator_window
from demos.memory_probes import SavedActivationMeter
from demos.probes import RankInfo
from demos.specs.activation_checkpointing import ActivationCheckpointingParams

WARMUP: dict[str, Any] = {"layers": 2, "width": 8, "tokens": 4, "segment_layers": 2, "steps": 1}
PRELOAD: tuple[str, ...] = ("torch.utils.checkpoint",)
MODEL_SEED = 1234


class Block(nn.Module):
    """x + Linear(d -> 4d) -> GeLU -> Linear(4d -> d)."""

    def __init__(self, width: int, hidden_width: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, hidden_width)
        self.act = nn.GELU()
        self.down = nn.Linear(hidden_width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(self.act(self.up(x)))


def _segment(blocks: list[nn.Module]):  # noqa: ANN202 - a closure over the segment
    def run_segment(x: torch.Tensor) -> torch.Tensor:
        for block in blocks:
            x = block(x)
        return x

    return run_segment


def forward(
    stack: nn.ModuleList,
    x: torch.Tensor,
    segment_layers: int | None,
    trace: LiveBytesTrace | None = None,
) -> torch.Tensor:
    """The stack's output; with `segment_layers`, each run of that many blocks is recomputed.

    With `trace`, backward marks "segment j" when it reaches segment j's output (block j's
    without recompute).
    """
    step = segment_layers or 1
    for index, start in enumerate(range(0, len(stack), step), 1):
        run_segment = _segment(list(stack[start : start + step]))
        if segment_layers is None:
            x = run_segment(x)
        else:
            x = checkpoint(run_segment, x, use_reentrant=False)
        if trace is not None:
            trace.on_gradient(x, f"segment {index}")
    return x


def loss_of(out: torch.Tensor) -> torch.Tensor:
    # The mean, not a squared error: its backward allocates one output-sized gradient and
    # nothing else, so the backward peak lies inside the stack, not in the loss's own backward.
    return out.mean()


def backward_peak(
    stack: nn.ModuleList, x: torch.Tensor, segment_layers: int | None
) -> dict[str, Any]:
    """One untimed step under `LiveBytesTrace`: the most activation bytes alive in backward.

    The batch counts (it is the first block's saved input); the parameters do not, nor do
    their gradients, which every mode writes alike. The stack's output is never bound to a
    name, so it dies as soon as autograd is done with it.
    """
    stack.zero_grad(set_to_none=True)
    trace = LiveBytesTrace(track=[x], exclude=stack.parameters())
    segments = {f"segment {index}": index for index in range(1, len(stack) + 1)}
    with cuda_allocator_window(x.device) as allocator, trace:
        trace.mark("forward")
        loss = loss_of(forward(stack, x, segment_layers, trace))
        trace.mark("backward")  # from the loss to the last output, before any segment
        loss.backward()
    peak = trace.peak(
        ["backward", *segments], leave_out=trace.live_ids(p.grad for p in stack.parameters())
    )
    return {
        "peak_bytes": peak.bytes_,
        "peak_segment": segments.get(peak.label),
        "peak_op": peak.op,
        "allocator_peak_bytes": allocator.peak_bytes,
    }


def _gradients(stack: nn.ModuleList) -> list[torch.Tensor]:
    return [p.grad.detach().clone() for p in stack.parameters() if p.grad is not None]


def run(rank: RankInfo, params: ActivationCheckpointingParams) -> Iterator[dict[str, Any]]:
    """This rank's side: one measured training step (forward, backward) per yielded row."""
    torch.manual_seed(MODEL_SEED)
    stack = nn.ModuleList(
        Block(params.width, params.hidden_width) for _ in range(params.layers)
    ).to(rank.device)
    generator = torch.Generator().manual_seed(MODEL_SEED + 1 + rank.rank)
    x = torch.randn(params.tokens, params.width, generator=generator).to(rank.device)

    loss_of(forward(stack, x, None)).backward()
    reference = _gradients(stack)
    for step in range(params.steps):
        for mode, segment_layers in params.modes:
            stack.zero_grad(set_to_none=True)
            rank.sync()
            dist.barrier()  # start together: the ranks share the CPU cores
            start_ns = time.perf_counter_ns()
            loss_of(forward(stack, x, segment_layers)).backward()
            rank.sync()
            time_s = (time.perf_counter_ns() - start_ns) / 1e9
            grads = _gradients(stack)
            # Counted afterwards, untimed: the saved-tensor hooks and the byte trace slow the
            # steps they watch (docs/demos.md, "Counted and clean passes").
            meter = SavedActivationMeter(exclude=stack.parameters())
            with meter:
                forward(stack, x, segment_layers)
            peak = backward_peak(stack, x, segment_layers)
            yield {
                "rank": rank.rank,
                "step": step,
                "mode": mode,
                "segment_layers": segment_layers,
                "saved_bytes": meter.bytes_,
                "saves": meter.saves,
                **peak,
                "time_s": time_s,
                "correct": len(grads) == len(reference)
                and all(torch.equal(g, r) for g, r in zip(grads, reference, strict=True)),
            }


def summary(
    params: ActivationCheckpointingParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per mode: the saved bytes and backward peak every rank measured (the largest, if they
    differ) and the median step time (slowest rank)."""
    modes = []
    for mode, segment_layers in params.modes:
        events = [e for e in measurements if e["ranks"][0]["mode"] == mode]
        saved = sorted({row["saved_bytes"] for e in events for row in e["ranks"]})
        peaks = sorted(
            {(row["peak_bytes"], row["peak_segment"]) for e in events for row in e["ranks"]}
        )
        allocator = [row["allocator_peak_bytes"] for e in events for row in e["ranks"]]
        modes.append(
            {
                "mode": mode,
                "segment_layers": segment_layers,
                "saved_bytes": saved[0] if len(saved) == 1 else saved,
                "same_on_every_rank": len(saved) == 1,
                "peak_bytes": peaks[-1][0],
                "peak_segment": peaks[-1][1],
                "peak_same_on_every_rank": len(peaks) == 1,
                "allocator_peak_bytes": None if None in allocator else max(allocator),
                "median_time_s": statistics.median(
                    max(row["time_s"] for row in e["ranks"]) for e in events
                ),
                "gradients_equal": all(e["correct"] for e in events),
            }
        )
    baseline_s = modes[0]["median_time_s"]
    for row in modes:
        row["time_vs_none"] = row["median_time_s"] / baseline_s if baseline_s else None
    return {"world_size": world_size, "steps": params.steps, "modes": modes}
