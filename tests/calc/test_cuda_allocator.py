"""The CUDA caching allocator's counting rules (app/calc/cuda_allocator.py), by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.calc.cuda_allocator import allocated_bounds, rounded_bytes


@pytest.mark.parametrize(
    ("request_bytes", "rounded"),
    [(0, 512), (1, 512), (512, 512), (513, 1024), (4 * 65_664, 262_656), (1 << 20, 1 << 20)],
)
def test_requests_round_up_to_512_bytes(request_bytes: int, rounded: int) -> None:
    # 4 * 65,664 = 262,656 = 513 * 512: already a multiple, kept as it is.
    assert rounded_bytes(request_bytes) == rounded


def test_only_large_requests_may_take_a_whole_cached_block() -> None:
    # Two DDP buckets: 1 MiB exactly (small pool: split to the byte) and 2,102,272 B (large
    # pool: 4,106 blocks of 512; a cached block up to 1 MiB larger may be handed out whole).
    assert allocated_bounds([1 << 20, 2_102_272]) == (1_048_576 + 2_102_272, 3_150_848 + 1_048_576)
    assert allocated_bounds([]) == (0, 0)


@given(st.lists(st.integers(0, 1 << 32), max_size=20))
def test_the_bounds_hold_every_request_rounded(requests: list[int]) -> None:
    low, high = allocated_bounds(requests)
    assert sum(requests) <= low <= high
    assert low - sum(requests) <= 512 * len(requests)  # 0 B still takes a 512 B block
    assert high - low <= (1 << 20) * len(requests)


def test_a_negative_request_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        rounded_bytes(-1)
