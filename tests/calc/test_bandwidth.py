"""nccl-tests' bandwidths, checked against its own worked definition (doc/PERFORMANCE.md)."""

from __future__ import annotations

import pytest

from app.calc.bandwidth import algbw_bytes_per_s, busbw_bytes_per_s
from app.calc.comm import Collective


def test_algbw_is_size_over_time() -> None:
    assert algbw_bytes_per_s(1_000_000_000, 0.5) == 2e9


@pytest.mark.parametrize(
    ("kind", "ranks", "busbw"),
    [
        (Collective.ALL_REDUCE, 8, 2e9 * 14 / 8),  # 2(n-1)/n
        (Collective.REDUCE_SCATTER, 8, 2e9 * 7 / 8),  # (n-1)/n
        (Collective.ALL_GATHER, 4, 2e9 * 3 / 4),
        (Collective.ALL_TO_ALL, 2, 2e9 / 2),
        (Collective.BROADCAST, 8, 2e9),  # 1
    ],
)
def test_busbw_applies_the_ring_factor(kind: Collective, ranks: int, busbw: float) -> None:
    assert busbw_bytes_per_s(kind, 1_000_000_000, ranks, 0.5) == pytest.approx(busbw)


def test_a_time_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        algbw_bytes_per_s(1, 0.0)


def test_time_is_the_median_of_each_runs_slowest_rank() -> None:
    from app.calc.bandwidth import slowest_rank_median_s

    assert slowest_rank_median_s([[0.1, 0.5, 0.2], [0.3, 0.1, 0.1]]) == 0.3  # 0.3, 0.5, 0.2
    assert slowest_rank_median_s([[1.0, 3.0], [2.0, 0.0]]) == 2.5  # 2.0 and 3.0
