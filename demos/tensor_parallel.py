"""Tensor-parallel split rules, written by hand so every collective is a visible line of code.

Megatron-LM's two operators (Shoeybi et al., arXiv:1909.08053, Section 3) are autograd functions
here: `f` is the identity going forward and an all-reduce of the gradient going back; `g` is an
all-reduce going forward and the identity going back. With them:

- MLP column then row: Y = g(GeLU(f(X) A_i) B_i), A split by columns, B by rows;
- MLP row then column: the other pairing, which needs the wide activation all-reduced before the
  GeLU and the output gathered from column slices (and the mirror image going back);
- attention by heads: Q, K, V projections split by columns (whole heads), W_O by rows.

Each step computes the block whole on this rank (the reference), then split twice: once with
forward and backward each in a counted window (bytes), once in clean timed windows (time).
The clean pass's output, dX and this rank's weight-gradient shards are checked against the
reference's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from demos.collective_calls import all_gather_single
from demos.probes import CountedStep, RankInfo, TimedStep
from demos.specs.tensor_parallel import TensorParallelParams

# 16 heads of width 1: splits over any power-of-two worker up to 16 ranks.
WARMUP: dict[str, Any] = {
    "hidden": 16,
    "heads": 16,
    "ffn_multiple": 1,
    "batch": 1,
    "seq_len": 2,
    "iterations": 1,
}
PRELOAD: tuple[str, ...] = ()

# float32 sums of the same products in another order differ by a few ulps of the result.
RTOL, ATOL = 1e-4, 1e-5
# Which weights each layout splits by columns (output features); the others split by rows.
SPLIT_BY_COLUMNS = {
    "mlp_column_row": ("a",),
    "mlp_row_column": ("b",),
    "attention_heads": ("wq", "wk", "wv"),
}


class CopyToParallel(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        return grad


class ReduceFromParallel(torch.autograd.Function):
    """Megatron's g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous().clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


def _gather_last_dim(x: torch.Tensor, world_size: int) -> torch.Tensor:
    """All-gather column slices (tokens, h/N) from every rank into (tokens, h)."""
    tokens, width = x.shape
    out = torch.empty((world_size * tokens, width), dtype=x.dtype, device=x.device)
    all_gather_single(out, x.contiguous())
    return out.view(world_size, tokens, width).permute(1, 0, 2).reshape(tokens, -1)


class GatherFromParallel(torch.autograd.Function):
    """Column slices in, the whole tensor out; backward keeps this rank's slice (no traffic)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
        ctx.rank, ctx.width = rank, x.shape[-1]
        return _gather_last_dim(x, world_size)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return grad[:, ctx.rank * ctx.width : (ctx.rank + 1) * ctx.width], None, None


class ScatterToParallel(torch.autograd.Function):
    """The whole tensor in, this rank's column slice out; backward gathers dX from the slices."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
        ctx.world_size = world_size
        width = x.shape[-1] // world_size
        return x[:, rank * width : (rank + 1) * width]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None]:
        return _gather_last_dim(grad, ctx.world_size), None, None


def _leaf(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.detach().clone().requires_grad_(True)


def _columns(tensor: torch.Tensor, rank: int, world_size: int) -> slice:
    width = tensor.shape[-1] // world_size
    return slice(rank * width, (rank + 1) * width)


def _rows(tensor: torch.Tensor, rank: int, world_size: int) -> slice:
    height = tensor.shape[0] // world_size
    return slice(rank * height, (rank + 1) * height)


class Block:
    """One block: whole weights, this rank's shards, and a forward for each."""

    def __init__(self, layout: str, params: TensorParallelParams, rank: RankInfo, seed: int):
        self.layout, self.params, self.rank = layout, params, rank
        gen = torch.Generator().manual_seed(seed)
        h, f = params.hidden, params.ffn_hidden

        def weight(rows: int, cols: int) -> torch.Tensor:
            return (torch.randn(rows, cols, generator=gen) / rows**0.5).to(rank.device)

        self.x = torch.randn(params.tokens, h, generator=gen).to(rank.device)
        if layout == "attention_heads":
            self.weights = {name: weight(h, h) for name in ("wq", "wk", "wv", "wo")}
        else:
            self.weights = {"a": weight(h, f), "b": weight(f, h)}
        self.grad_y = torch.randn(params.tokens, h, generator=gen).to(rank.device)
        r, n, whole = rank.rank, rank.world_size, slice(None)
        self.shard_of = {
            name: (whole, _columns(w, r, n))
            if name in SPLIT_BY_COLUMNS[layout]
            else (_rows(w, r, n), whole)
            for name, w in self.weights.items()
        }

    def whole(self) -> dict[str, torch.Tensor]:
        return {name: _leaf(w) for name, w in self.weights.items()}

    def shards(self) -> dict[str, torch.Tensor]:
        return {name: _leaf(w[self.shard_of[name]]) for name, w in self.weights.items()}

    def reference(self, x: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.layout == "attention_heads":
            return self._attention(x, w, self.params.heads) @ w["wo"]
        return F.gelu(x @ w["a"]) @ w["b"]

    def parallel(self, x: torch.Tensor, w: dict[str, torch.Tensor]) -> torch.Tensor:
        r, n = self.rank.rank, self.rank.world_size
        if self.layout == "mlp_column_row":
            return ReduceFromParallel.apply(F.gelu(CopyToParallel.apply(x) @ w["a"]) @ w["b"])
        if self.layout == "mlp_row_column":
            x_slice = ScatterToParallel.apply(x, r, n)
            z = F.gelu(ReduceFromParallel.apply(x_slice @ w["a"]))
            return GatherFromParallel.apply(CopyToParallel.apply(z) @ w["b"], r, n)
        heads = self.params.heads // n
        return ReduceFromParallel.apply(
            self._attention(CopyToParallel.apply(x), w, heads) @ w["wo"]
        )

    def _attention(self, x: torch.Tensor, w: dict[str, torch.Tensor], heads: int) -> torch.Tensor:
        """Causal self-attention over `heads` heads of x's sequences; (tokens, heads * d)."""
        p = self.params
        head_dim = p.hidden // p.heads

        def split_heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(p.batch, p.seq_len, heads, head_dim).transpose(1, 2)

        q, k, v = (split_heads(x @ w[name]) for name in ("wq", "wk", "wv"))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(p.tokens, heads * head_dim)


def _max_error(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[float, bool]:
    error = max(float((a - b).abs().max()) for a, b in pairs)
    close = all(torch.allclose(a, b, rtol=RTOL, atol=ATOL) for a, b in pairs)
    return error, close


def _pass_row(counted: CountedStep, timed: TimedStep) -> dict[str, Any]:
    return {
        "time_s": timed.time_s,
        "logical_bytes": counted.counter.logical_bytes(),
        "wire_bytes": counted.wire_bytes,
        "collectives": counted.counter.by_kind(),
    }


def _split_step(
    block: Block, rank: RankInfo, window: type[CountedStep] | type[TimedStep]
) -> tuple[Any, Any, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Forward and backward of the split block, each in a window of its own."""
    x, w = _leaf(block.x), block.shards()
    rank.sync()
    dist.barrier()
    with window(rank.sync) as forward:
        y = block.parallel(x, w)
    with window(rank.sync) as backward:
        y.backward(block.grad_y)
    return forward, backward, y, x, w


def run(rank: RankInfo, params: TensorParallelParams) -> Iterator[dict[str, Any]]:
    """This rank's side: per split and step, one row with the forward and backward windows."""
    problem = params.problem_with(rank.world_size)
    if problem is not None:
        raise ValueError(problem)
    for layout in params.layouts:
        for iteration in range(params.iterations):
            block = Block(layout, params, rank, seed=1000 * iteration + len(layout))
            x_ref, w_ref = _leaf(block.x), block.whole()
            y_ref = block.reference(x_ref, w_ref)
            y_ref.backward(block.grad_y)

            counted_forward, counted_backward, *_ = _split_step(block, rank, CountedStep)
            forward, backward, y, x, w = _split_step(block, rank, TimedStep)

            pairs = [(y.detach(), y_ref.detach()), (x.grad, x_ref.grad)]
            pairs += [(w[n].grad, w_ref[n].grad[block.shard_of[n]]) for n in block.weights]
            error, close = _max_error(pairs)
            yield {
                "rank": rank.rank,
                "layout": layout,
                "step": iteration,
                "time_s": forward.time_s + backward.time_s,
                "forward": _pass_row(counted_forward, forward),
                "backward": _pass_row(counted_backward, backward),
                "max_abs_error": error,
                "correct": close,
            }


def summary(
    params: TensorParallelParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Per split and pass: what rank 0 issued, mean wire bytes per rank, slowest-rank time."""
    layouts = []
    for layout in params.layouts:
        events = [e for e in measurements if e["ranks"][0]["layout"] == layout]
        passes = {}
        for pass_ in ("forward", "backward"):
            rows = [row[pass_] for event in events for row in event["ranks"]]
            passes[pass_] = {
                "collectives": events[-1]["ranks"][0][pass_]["collectives"],
                "same_on_every_rank_and_step": all(
                    row["collectives"] == rows[0]["collectives"] for row in rows
                ),
                "logical_bytes_per_rank": statistics.fmean(row["logical_bytes"] for row in rows),
                "wire_bytes_per_rank": statistics.fmean(row["wire_bytes"] for row in rows),
                "median_time_s": statistics.median(
                    max(row[pass_]["time_s"] for row in e["ranks"]) for e in events
                ),
            }
        layouts.append(
            {
                "layout": layout,
                "steps": len(events),
                "passes": passes,
                "max_abs_error": max(r["max_abs_error"] for e in events for r in e["ranks"]),
                "correct": all(event["correct"] for event in events),
            }
        )
    return {"world_size": world_size, "layouts": layouts}
