"""What PyTorch's CUDA caching allocator counts in `memory_allocated` for a request of n bytes.

From c10/cuda/CUDACachingAllocator.cpp (torch 2.11-2.13, default settings: no
roundup_power2_divisions, no expandable segments, no max_split_size):
- `round_size`: a request is rounded up to a multiple of kMinBlockSize = 512 bytes (512 at
  the least);
- requests of at most kSmallSize = 1 MiB come from the small pool and are cut from its 2 MiB
  segments exactly (`should_split`: a remainder of 512 bytes or more is split off);
- larger ones come from the large pool, where a cached block is split only when more than
  kSmallSize would remain (`should_split`: remaining > kSmallSize). A reused block up to
  1 MiB larger than the rounded request is handed out whole, and `memory_allocated` counts
  the block's size, so it may read up to 1 MiB above the rounded request.
A new segment (cudaMalloc of 2 MiB for small requests, 20 MiB for 1 to 10 MiB, else the
request rounded up to 2 MiB: `get_allocation_size`) is split by the same rule, so the same
bounds hold whether a request reuses a cached block or makes a segment.
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_BLOCK_BYTES = 512
SMALL_SIZE_BYTES = 1 << 20  # kSmallSize: the small pool's largest request, and the split slack


def rounded_bytes(request: int) -> int:
    """A request as the allocator rounds it (round_size)."""
    if request < 0:
        raise ValueError("a request cannot be negative")
    return max(MIN_BLOCK_BYTES, -(-request // MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES)


def allocated_bounds(requests: Iterable[int]) -> tuple[int, int]:
    """The least and the most `memory_allocated` can grow by for these live requests: their
    rounded sizes, plus up to 1 MiB for each large one that a cached block may serve whole."""
    rounded = [rounded_bytes(r) for r in requests]
    slack = sum(SMALL_SIZE_BYTES for r in rounded if r > SMALL_SIZE_BYTES)
    return sum(rounded), sum(rounded) + slack
