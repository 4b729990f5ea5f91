"""Mixed precision on real tensors: fp16 gradients underflow, loss scaling saves them, bf16 range.

Every rank runs the same experiment and reports its own row. A linear layer with fp32 master
weights w runs its forward in the case's dtype (w cast down, as autocast does), the loss is
reduced in fp32, and backward produces the gradient in that dtype, where small values round to
zero. The gradient is then all-reduced across the ranks in that same dtype (counted bytes:
half of fp32's for 16-bit; the page shows no time, so nothing is timed), averaged in fp32 and,
for the loss-scaled case, unscaled and checked for infinities by `torch.amp.GradScaler`, which
skips the step if it finds any.

The last iteration casts known values to fp16 and bf16 and reads torch.finfo and the smallest
subnormal from the bits, for the page to set beside app.calc.precision's IEEE formulas.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from demos.probes import CountedStep, RankInfo
from demos.specs.mixed_precision import RANGE_PROBES, MixedPrecisionParams

WARMUP: dict[str, Any] = {
    "gradients": 16,
    "loss_weight_exponent": 16,
    "spread_exponent": 14,
    "loss_scale_exponent": 16,
}
PRELOAD: tuple[str, ...] = ("torch.amp",)
LEARNING_RATE = 0.1
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
SWEEP_SEED = 7
SWEEP_ELEMENTS = 1 << 16


def cases(params: MixedPrecisionParams) -> list[tuple[str, str, int | None]]:
    """(case name, dtype name, loss-scale exponent or None), in the order they run."""
    return [
        ("fp32", "fp32", None),
        ("fp16", "fp16", None),
        ("fp16 + loss scale", "fp16", params.loss_scale_exponent),
        ("bf16", "bf16", None),
    ]


def inputs(params: MixedPrecisionParams) -> torch.Tensor:
    """x_i = 2^(-spread * (i + 1/2) / n): midpoints of n equal steps of log2 x in [-spread, 0]."""
    steps = (torch.arange(params.gradients, dtype=torch.float64) + 0.5) / params.gradients
    return torch.exp2(-params.spread_exponent * steps).float()


def _train_step(
    rank: RankInfo, params: MixedPrecisionParams, dtype: torch.dtype, scale_exp: int | None
) -> tuple[torch.Tensor, CountedStep, bool, bool, float | None]:
    x = inputs(params).to(rank.device)
    master = torch.ones(params.gradients, device=rank.device, requires_grad=True)
    optimizer = torch.optim.SGD([master], lr=LEARNING_RATE)
    scaler = torch.amp.GradScaler(
        rank.device.type,
        init_scale=2.0 ** (scale_exp or 0),
        enabled=scale_exp is not None,
    )
    low = master.to(dtype)
    low.retain_grad()
    loss = (low * x.to(dtype)).float().sum() * 2.0**-params.loss_weight_exponent
    scaler.scale(loss).backward()
    grad = low.grad if low.grad is not None else master.grad
    local = grad.detach().clone()
    rank.sync()
    dist.barrier()
    with CountedStep(rank.sync) as step:
        dist.all_reduce(grad)  # the gradient all-reduce, in the gradient's own dtype
    summed_ok = torch.allclose(
        grad.float(), local.float() * rank.world_size, rtol=2.0**-7, atol=0.0, equal_nan=True
    )
    master.grad = grad.float() / rank.world_size
    before = master.detach().clone()
    scaler.unscale_(optimizer)
    unscaled = master.grad.detach().clone()
    scaler.step(optimizer)
    scaler.update()
    skipped = torch.equal(before, master.detach())
    return unscaled, step, summed_ok, skipped, scaler.get_scale() if scaler.is_enabled() else None


def _relative_error(values: torch.Tensor, reference: torch.Tensor) -> float:
    """Largest |v - r| / |r| over the values that are neither zero nor infinite."""
    kept = (values != 0) & torch.isfinite(values)
    if not bool(kept.any()):
        return 0.0
    return float(((values[kept] - reference[kept]).abs() / reference[kept].abs()).max())


def _smallest_subnormal(dtype: torch.dtype) -> float:
    """The value whose bits are 0...01: read from the bits, not from a table."""
    return float(torch.tensor([1], dtype=torch.int16).view(dtype).float())


def range_row(rank: RankInfo) -> dict[str, Any]:
    """Known values cast to fp16 and bf16, each format's limits, and its worst rounding error."""
    probes = torch.tensor(RANGE_PROBES, dtype=torch.float32, device=rank.device)
    generator = torch.Generator().manual_seed(SWEEP_SEED)
    # fp32 values with random mantissas across 2^-10 .. 2^10, inside both formats' normal range
    sweep = torch.exp2(torch.empty(SWEEP_ELEMENTS).uniform_(-10, 10, generator=generator))
    formats = {}
    for name in ("fp16", "bf16"):
        dtype = DTYPES[name]
        info = torch.finfo(dtype)
        rounded = sweep.to(dtype).float()
        formats[name] = {
            "casts": [repr(v) for v in probes.to(dtype).float().tolist()],
            "max": float(info.max),
            "smallest_normal": float(info.smallest_normal),
            "smallest_subnormal": _smallest_subnormal(dtype),
            "eps": float(info.eps),
            "max_relative_error": float(((rounded - sweep).abs() / sweep).max()),
        }
    return {"rank": rank.rank, "case": "range", "probes": list(RANGE_PROBES), "formats": formats}


def run(rank: RankInfo, params: MixedPrecisionParams) -> Iterator[dict[str, Any]]:
    """This rank's side: one row per precision case, then one row for the range check."""
    reference: torch.Tensor | None = None
    for case, dtype_name, scale_exp in cases(params):
        grads, step, summed_ok, skipped, scale_after = _train_step(
            rank, params, DTYPES[dtype_name], scale_exp
        )
        if reference is None:
            reference = grads
        yield {
            **step.as_dict(rank.rank),
            "case": case,
            "dtype": dtype_name,
            "loss_scale_exponent": scale_exp,
            "zero_fraction": float((grads == 0).float().mean()),
            "inf_fraction": float(torch.isinf(grads).float().mean()),
            "max_relative_error": _relative_error(grads, reference),
            "step_skipped": skipped,
            "scale_after": scale_after,
            "correct": summed_ok,
        }
    yield {**range_row(rank), "correct": True}


def summary(
    params: MixedPrecisionParams, world_size: int, measurements: list[dict[str, Any]]
) -> dict[str, Any]:
    """Rank 0's rows (every rank runs the same experiment) and whether the ranks agreed."""
    keys = ("zero_fraction", "inf_fraction", "step_skipped", "payload_bytes", "logical_bytes")
    cases_ = []
    for event in measurements[:-1]:
        first = event["ranks"][0]
        cases_.append(
            {
                **{k: first[k] for k in ("case", "dtype", "loss_scale_exponent", "scale_after")},
                **{k: first[k] for k in keys},
                "max_relative_error": max(r["max_relative_error"] for r in event["ranks"]),
                "ranks_agree": all(all(r[k] == first[k] for k in keys) for r in event["ranks"]),
                "wire_bytes": [r["wire_bytes"] for r in event["ranks"]],
                "all_reduce_correct": event["correct"],
            }
        )
    return {
        "world_size": world_size,
        "gradients": params.gradients,
        "cases": cases_,
        "range": measurements[-1]["ranks"][0],
    }
