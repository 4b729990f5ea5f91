"""How PyTorch's ZeRO implementations split real parameter tensors over ranks, to the byte.

The ZeRO paper divides Psi evenly by N_d (app.calc.memory). Real implementations shard whole
tensors, so the exact bytes a rank holds and sends follow their rules:

- FSDP2 (`torch.distributed.fsdp.fully_shard`) shards every parameter on dim 0 like
  `torch.chunk`: each rank gets ceil(d0 / N) rows, the last ranks fewer (or none). Its
  sharded storage and its collectives are PADDED to ceil(d0 / N) rows on every rank, so a
  dim 0 the ranks do not divide costs extra bytes (torch/distributed/fsdp/_fully_shard/
  _fsdp_param.py, `_init_sharded_param`: "padded_sharded_size"). Each FSDP unit (a
  `fully_shard`-ed module) all-gathers and reduce-scatters its parameters as one flat buffer
  of N times its padded shard.
- ZeroRedundancyOptimizer (ZeRO-1) gives whole tensors to ranks: largest first, each to the
  rank with the fewest elements so far, ties to the lowest rank
  (torch/distributed/optim/zero_redundancy_optimizer.py, `_partition_parameters`). After the
  step, each rank broadcasts the tensors it owns, one broadcast per tensor.
- DistributedDataParallel all-reduces gradients through flat buckets that it allocates when it
  is built (one tensor per bucket, every parameter's gradient in exactly one, unpadded) and
  keeps for the model's lifetime. With `gradient_as_bucket_view=False`, the default, each
  `param.grad` is a separate tensor copied into its bucket, so the buckets are a second copy of
  the gradients; with True the gradients are views into the buckets and cost nothing more
  (the argument's docstring: "the saved memory size will be equal to the total gradients
  size"; torch/nn/parallel/distributed.py). demos/zero_stages.py measures what DDP's
  construction allocates against this.
- torch.optim.Adam keeps, per parameter, `exp_avg` and `exp_avg_sq` of the parameter's local
  size and dtype, and a `step` counter: a float32 scalar tensor, 4 B (torch/optim/adam.py,
  `_init_group`; `_get_scalar_dtype()` is float32 by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Shape = Sequence[int]

ADAM_STEP_BYTES = 4


def numel(shape: Shape) -> int:
    return math.prod(shape)


def padded_shard_rows(dim0: int, ranks: int) -> int:
    """Rows of dim 0 every rank stores under FSDP2, padding included: ceil(d0 / N)."""
    if ranks < 1:
        raise ValueError("ranks must be at least 1")
    return -(-dim0 // ranks)


def shard_rows(dim0: int, ranks: int, rank: int) -> int:
    """Rows rank `rank` really owns (torch.chunk on dim 0): ceil(d0/N), fewer at the end."""
    if not 0 <= rank < ranks:
        raise ValueError("rank must be in [0, ranks)")
    rows = padded_shard_rows(dim0, ranks)
    return max(0, min(rows, dim0 - rank * rows))


def padded_shard_elements(shape: Shape, ranks: int) -> int:
    """Elements of one parameter's padded FSDP2 shard, the same on every rank."""
    return padded_shard_rows(shape[0], ranks) * numel(shape[1:])


def shard_elements(shape: Shape, ranks: int, rank: int) -> int:
    """Elements of one parameter rank `rank` really owns under FSDP2 (no padding)."""
    return shard_rows(shape[0], ranks, rank) * numel(shape[1:])


def padding_elements(shapes: Sequence[Shape], ranks: int) -> int:
    """Elements FSDP2 adds to make every dim 0 divisible by N, summed over parameters."""
    return sum(ranks * padded_shard_elements(s, ranks) - numel(s) for s in shapes)


def greedy_partition(sizes: Sequence[int], ranks: int) -> list[int]:
    """The rank ZeroRedundancyOptimizer gives each tensor (by index), from tensor sizes.

    Largest first (a stable sort, so equal sizes keep their order), each to the rank with
    the fewest elements so far, ties to the lowest rank.
    """
    if ranks < 1:
        raise ValueError("ranks must be at least 1")
    loads = [0] * ranks
    owner = [0] * len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: sizes[i], reverse=True):
        rank = loads.index(min(loads))
        owner[index] = rank
        loads[rank] += sizes[index]
    return owner


def adam_state_bytes(elements: int, tensors: int, dtype_bytes: int = 4) -> int:
    """Adam's state for `tensors` parameters of `elements` in total: m and v, and a step each."""
    return 2 * dtype_bytes * elements + ADAM_STEP_BYTES * tensors


def ddp_bucket_bytes(elements: float, grad_bytes: float) -> float:
    """Bytes of DDP's gradient buckets beside the gradients, with gradient_as_bucket_view=False
    (torch's default): one more copy of every gradient it reduces."""
    return elements * grad_bytes
