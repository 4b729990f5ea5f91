"""Activation checkpointing on a residual MLP stack: saved bytes down, step time up.

Every rank builds the same stack (same seed) and its own batch, then trains it one step at a
time in each mode: no recompute, every block checkpointed, and segments of k blocks
checkpointed (`torch.utils.checkpoint`, non-reentrant). Each measured step reports the bytes
autograd saved during the forward pass (`SavedActivationMeter`) and the step's wall time;
its gradients must equal, bit for bit, those of a reference step without recompute taken
before any window, since recompute reruns the same ops on the same inputs.
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

from demos.probes import RankInfo, SavedActivationMeter
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


def forward(stack: nn.ModuleList, x: torch.Tensor, segment_layers: int | None) -> torch.Tensor:
    """The stack's output; with `segment_layers`, each run of that many blocks is recomputed."""
    if segment_layers is None:
        return _segment(list(stack))(x)
    for start in range(0, len(stack), segment_layers):
        run_segment = _segment(list(stack[start : start + segment_layers]))
        x = checkpoint(run_segment, x, use_reentrant=False)
    return x


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

    forward(stack, x, None).square().mean().backward()
    reference = _gradients(stack)
    for step in range(params.steps):
        for mode, segment_layers in params.modes:
            stack.zero_grad(set_to_none=True)
            rank.sync()
            dist.barrier()  # start together: the ranks share the CPU cores
            meter = SavedActivationMeter(exclude=stack.parameters())
            start_ns = time.perf_counter_ns()
            with meter:
                out = forward(stack, x, segment_layers)
            out.square().mean().backward()
            rank.sync()
            time_s = (time.perf_counter_ns() - start_ns) / 1e9
            grads = _gradients(stack)
            yield {
                "rank": rank.rank,
                "step": step,
                "mode": mode,
                "segment_layers": segment_layers,
                "saved_bytes": meter.bytes_,
                "saves": meter.saves,
                "time_s": time_s,
                "correct": len(grads) == len(reference)
                and all(torch.equal(g, r) for g, r in zip(grads, reference, strict=True)),
            }


def summary(
    params: ActivationCheckpointingParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per mode: the saved bytes every rank measured and the median step time (slowest rank)."""
    modes = []
    for mode, segment_layers in params.modes:
        events = [e for e in measurements if e["ranks"][0]["mode"] == mode]
        saved = sorted({row["saved_bytes"] for e in events for row in e["ranks"]})
        modes.append(
            {
                "mode": mode,
                "segment_layers": segment_layers,
                "saved_bytes": saved[0] if len(saved) == 1 else saved,
                "same_on_every_rank": len(saved) == 1,
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
